#!/usr/bin/python3
"""NCA JSON against CF-1.13 over the same tiny partitions, binaries
alternated (a script, not a test): for ROUNDS rounds, for each command
(`series`: ncks `tas[:,0,0]`; `cat` of the view), each aggregation (nca.nca,
cf.nc of a folder scale_bench.py wrote) and each binary in turn: a fresh
mount (`-o open_files=128`, under `ulimit -n 1024`), the first `stat` of the
view, then the command, timed, with the daemon's CPU (utime + stime from
/proc/PID/stat) before and after it. Prints each run with the load average,
then the medians and the CF-1.13 / NCA ratios per binary. The machine may
be shared: compare figures of one run only, and the CPU more than the wall.

--preopen S: open the view once and wait S seconds before the command, so
that the background sweep of the partitions (fs/partition_sweeps.hpp) has
answered and the command's reads are not served with direct I/O meanwhile.

usage: alternated_mounts_bench.py FOLDER ROUNDS series|cat|both BIN [BIN...] [--preopen S]
(FOLDER: WORK/n100000 after `scale_bench.py BIN --work WORK --sizes 100000`.)
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

KINDS = (("NCA", "nca.nc"), ("CF-1.13", "cf.nc"))


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


def load():
    return open("/proc/loadavg").read().split()[0]


def run_command(command, view):
    if command == "cat":
        with open(view, "rb") as f:
            while f.read(1 << 20):
                pass
    else:
        subprocess.run(["ncks", "-O", "-H", "-C", "-v", "tas", "-d", "lat,0", "-d", "lon,0", view],
                       stdout=subprocess.DEVNULL, check=True)


def one_mount(binary, folder, name, command, preopen):
    """(wall, daemon CPU) of command on a fresh mount of folder."""
    mnt = tempfile.mkdtemp(prefix="ncafs-alternated-mnt-")
    proc = subprocess.Popen([binary, folder, mnt, "-f", "-o", "open_files=128"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    view = os.path.join(mnt, name)
    try:
        started = time.time()
        while True:
            try:
                if os.path.ismount(mnt):
                    os.stat(view)
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() - started > 120:
                raise SystemExit("%s did not mount %s" % (binary, folder))
            time.sleep(0.005)
        if preopen:
            open(view, "rb").close()
            time.sleep(preopen)
        cpu = cpu_seconds(proc.pid)
        t0 = time.time()
        run_command(command, view)
        return time.time() - t0, cpu_seconds(proc.pid) - cpu
    finally:
        subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL)
        proc.wait(timeout=120)
        os.rmdir(mnt)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("rounds", type=int)
    p.add_argument("what", choices=("series", "cat", "both"))
    p.add_argument("binaries", nargs="+")
    p.add_argument("--preopen", type=float, default=0.0)
    args = p.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))  # inherited by the daemons
    commands = ["series", "cat"] if args.what == "both" else [args.what]
    binaries = [os.path.abspath(b) for b in args.binaries]
    runs = {}
    for r in range(args.rounds):
        for command in commands:
            for kind, name in KINDS:
                for b, binary in enumerate(binaries):
                    wall, cpu = one_mount(binary, args.folder, name, command, args.preopen)
                    runs.setdefault((command, kind, b), []).append((wall, cpu))
                    print("round %d %-6s %-7s bin%d wall %.3f s cpu %.2f s load %s" %
                          (r, command, kind, b, wall, cpu, load()), flush=True)
    for command in commands:
        for b, binary in enumerate(binaries):
            med = {kind: (statistics.median(w for w, _ in runs[(command, kind, b)]),
                          statistics.median(c for _, c in runs[(command, kind, b)])) for kind, _ in KINDS}
            print("%-6s bin%d %s: NCA %.3f s (cpu %.2f)  CF-1.13 %.3f s (cpu %.2f)  CF/NCA wall %.2f cpu %.2f" %
                  (command, b, binary, med["NCA"][0], med["NCA"][1], med["CF-1.13"][0], med["CF-1.13"][1],
                   med["CF-1.13"][0] / med["NCA"][0], med["CF-1.13"][1] / max(med["NCA"][1], 1e-9)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
