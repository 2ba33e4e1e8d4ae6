#!/usr/bin/python3
"""System calls and wall time of reads of an aggregation of many tiny
partitions through a mount (a script, not a test). Generates, in WORK
(reused when present), N classic partitions of 128 bytes
(tests/e2e/make_many_partitions.py), then, each on a fresh mount whose
daemon has already parsed the aggregation (a stat of the view):
  cat   of the whole virtual file
  point ncks -d x,5 (one value per partition: a point time series)
with strace -c -f attached to the daemon for the read alone (the counts),
and again without strace (the wall time, best of REPEAT fresh mounts).

usage: many_partitions_bench.py NCAFS_BINARY [WORK [N [REPEAT]]]
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import make_many_partitions  # noqa: E402
from test_many_partitions import Traced  # noqa: E402  (strace -c -f attached to every thread)
import bench_cli  # noqa: E402

WATCHED = ("openat", "openat2", "newfstatat", "fstat", "statx", "readlink", "readlinkat", "access", "faccessat",
           "faccessat2", "pread64", "close")


class Mount:
    def __init__(self, ncafs, source):
        self.mnt = tempfile.mkdtemp(prefix="ncafs-manybench-mnt-")
        self.proc = subprocess.Popen([ncafs, source, self.mnt, "-f"], stderr=subprocess.DEVNULL)
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None:
                raise SystemExit("ncafs failed to mount")
            time.sleep(0.05)

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        self.proc.wait(timeout=120)
        os.rmdir(self.mnt)


def run_read(ncafs, work, command, traced):
    """Fresh mount; the aggregation parsed; then command (a list, {view} replaced). Returns (seconds, counts)."""
    m = Mount(ncafs, work)
    try:
        view = os.path.join(m.mnt, "many.nc")
        os.stat(view)
        argv = [a.replace("{view}", view) for a in command]
        if not traced:
            start = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            return time.perf_counter() - start, {}
        out = tempfile.NamedTemporaryFile(prefix="ncafs-manybench-strace-", delete=False).name
        with Traced(m.proc.pid, out) as tracer:
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        os.unlink(out)
        return 0.0, tracer.counts
    finally:
        m.close()


def main():
    args = bench_cli.positional(__doc__, "/tmp/ncafs-manybench", 100000, 3)
    if args is None:
        return 2
    ncafs, work, n, repeat = args
    if not os.path.exists(os.path.join(work, "many.nca")):
        os.makedirs(work, exist_ok=True)
        make_many_partitions.write(work, n)
        # Files changed within the last second are read twice, after a lease
        # probe (io/open_file.hpp): not what this measures.
        time.sleep(1.1)
    out = tempfile.mkdtemp(prefix="ncafs-manybench-out-")
    commands = {"cat": ["cat", "{view}"],
                "point": ["ncks", "-O", "-d", "x,5", "-v", "v", "{view}", os.path.join(out, "point.nc")]}
    for name, command in commands.items():
        _, counts = run_read(ncafs, work, command, True)
        best = min(run_read(ncafs, work, command, False)[0] for _ in range(repeat))
        per = ", ".join("%s %.2f" % (c, counts[c] / n) for c in WATCHED if c in counts)
        print("%-5s %d partitions: %.2f s (best of %d); per partition: %s" % (name, n, best, repeat, per), flush=True)
        print("      all calls: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items(), key=lambda kv: -kv[1])[:12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
