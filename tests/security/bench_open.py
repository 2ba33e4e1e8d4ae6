#!/usr/bin/python3
"""Cost of the caller check at open for an aggregation of N partitions (root only).

Usage: bench_open.py N   (NCAFS_BIN: the ncafs executable). Mounts with
allow_other and times, as an unprivileged user, the first open of the view
(every partition checked) and the next opens (cached decision), and as root
(the same path, checks included). Prints seconds; asserts nothing.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
import make_aggregations  # noqa: E402
from test_access import GROUP, USER, cleanup_identities, run  # noqa: E402
from test_mount import Mount  # noqa: E402

TIMER = r"""
import os, sys, time
path = sys.argv[1]
times = []
for i in range(5):
    t = time.perf_counter(); fd = os.open(path, os.O_RDONLY); os.close(fd); times.append(time.perf_counter() - t)
print("first open %.4f s, next opens %s s" % (times[0], " ".join("%.4f" % x for x in times[1:])))
"""


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def main():
    n = int(sys.argv[1])
    cleanup_identities()
    run("groupadd", "--system", GROUP)
    run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER)
    work = tempfile.mkdtemp(prefix="ncafs-h-access-bench-")
    os.chmod(work, 0o755)
    try:
        folder = os.path.join(work, "src")
        make_aggregations.write_aggregation(folder, "many", ["time"], {"time": n}, {"time": [1] * n})
        os.chmod(folder, 0o755)
        with Mount(folder, "allow_other") as m:
            os.listdir(m.mnt)
            print("daemon RSS before the first open: %d KiB" % rss_kib(m.process.pid))
            for who in (["runuser", "-u", USER, "--"], []):
                r = subprocess.run(who + ["/usr/bin/python3", "-c", TIMER, m.path("many.nc")], capture_output=True,
                                   text=True, cwd="/")
                print("%s, %d partitions: %s" % (USER if who else "root", n, (r.stdout + r.stderr).strip()))
            print("daemon RSS after: %d KiB" % rss_kib(m.process.pid))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        cleanup_identities()


if __name__ == "__main__":
    main()
