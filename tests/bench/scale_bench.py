#!/usr/bin/python3
"""Scaling with the number of partitions up to a million (a script, not a
test). For each N (default 10,000 and 100,000; --huge adds
1,000,000) it writes N tiny classic partitions (CDF-1 bytes, 2x2 floats
each, tests/e2e/tiny_partitions.py) under WORK, aggregates them as NCA JSON
(written here) and as CF-1.13 (`ncafs aggregate --files-from`), and under
`ulimit -n 1024` times, per aggregation:
  mount -> first stat of the virtual file (wall and daemon CPU time),
  `ncdump -h` (first, second),
  a point time series with ncks (tas[:,0,0]; first, second), `cat` of the
  virtual file (MB/s), `ncafs inspect`, `ncafs check`,
and reports the daemon's peak RSS (VmHWM) and most open descriptors, and
`ncafs aggregate`'s time and peak RSS (--aggregate-only: that alone).
Baselines measured in the same run, on a local classic file (a single-file
dataset) holding the same values: `ncdump -h` and the ncks time series; ratio = mount / local.
The machine may be shared: compare figures within one run only.

usage: scale_bench.py NCAFS_BINARY [--work DIR] [--sizes N,N...] [--huge]
                      [--skip-reads] [--aggregate-only] [--series-only]
                      [--compare NCAFS_BEFORE] [--timeout S]
--compare measures a second binary on the same data in the same run (each
aggregation: the other binary's mount first, then NCAFS_BINARY's).
"""
import argparse
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import tiny_partitions as tp  # noqa: E402

FD_LIMIT = 1024


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def write_local_copy(path, n):
    """The aggregation's values as one classic file, not an aggregation (the baseline)."""
    times = struct.pack(">%dd" % n, *[float(i) for i in range(n)])
    tas = b"".join(struct.pack(">4f", *tp.expected_tas(i)) for i in range(n))
    data = tp.cdf1_bytes([("time", n), ("lat", tp.NLAT), ("lon", tp.NLON)],
                         [("time", [0], tp.NC_DOUBLE, {"units": "days since 2000-01-01"}, times),
                          ("tas", [0, 1, 2], tp.NC_FLOAT, {"units": "K"}, tas)])
    with open(path, "wb") as f:
        f.write(data)


def generate(work, ncafs, n):
    folder = os.path.join(work, "n%d" % n)
    done = os.path.join(folder, ".complete")
    if not os.path.exists(done):
        shutil.rmtree(folder, ignore_errors=True)
        log("writing %d partitions in %s" % (n, folder))
        names = tp.write_partitions(os.path.join(folder, "parts"), n)
        tp.write_nca(os.path.join(folder, "nca.nca"), names)
        write_local_copy(os.path.join(folder, "local.nc"), n)
        open(done, "w").close()
    cf = os.path.join(folder, "cf.nc")
    if os.path.exists(cf):
        os.unlink(cf)  # written by the ncafs under test
    names = [os.path.join(folder, "parts", "part_%07d.nc" % i) for i in range(n)]
    t0 = time.time()
    peak_kib = tp.write_cf(ncafs, cf, names)
    return folder, (time.time() - t0, peak_kib / 1024.0)


class FdSampler:
    """Highest count of /proc/PID/fd entries, sampled until stopped."""

    def __init__(self, pid):
        self.pid, self.highest = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.highest = max(self.highest, len(os.listdir("/proc/%d/fd" % self.pid)))
            except OSError:
                pass
            time.sleep(0.01)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.highest


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def cpu_seconds(pid):
    """utime + stime of a process (the machine may be shared: CPU time is steadier than wall time)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


def run_timed(cmd, timeout):
    t0 = time.time()
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if r.returncode != 0:
        log("%s failed: %s" % (" ".join(cmd), r.stderr.decode(errors="replace")[-300:]))
        return None
    return time.time() - t0


def cat_mb_per_s(path, timeout):
    t0 = time.time()
    size = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            size += len(block)
            if time.time() - t0 > timeout:
                return None
    return size / 1e6 / max(time.time() - t0, 1e-9)


def series_cmd(path):
    return ["ncks", "-O", "-H", "-C", "-v", "tas", "-d", "lat,0", "-d", "lon,0", path]


def measure_mount(ncafs, folder, source_name, args):
    """Figures of one aggregation through a real mount of folder."""
    out = {}
    mnt = tempfile.mkdtemp(prefix="ncafs-scale-mnt-")
    virtual = os.path.join(mnt, os.path.splitext(source_name)[0] + ".nc")
    t0 = time.time()
    # A 1,000,000-partition NCA aggregation is charged ~534 MB (docs/performance.md "Memory per partition").
    proc = subprocess.Popen([ncafs, folder, mnt, "-f", "-o", "open_files=128"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fds = FdSampler(proc.pid)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError("ncafs exited with %d" % proc.returncode)
            try:
                if os.path.ismount(mnt):
                    os.stat(virtual)
                    break
            except OSError:
                pass
            if time.time() - t0 > args.timeout:
                raise RuntimeError("no mount within %d s" % args.timeout)
            time.sleep(0.005)
        out["mount_stat"] = time.time() - t0
        out["mount_cpu"] = cpu_seconds(proc.pid)
        if not args.series_only:
            out["ncdump1"] = run_timed(["ncdump", "-h", virtual], args.timeout)
            out["ncdump2"] = run_timed(["ncdump", "-h", virtual], args.timeout)
        if not args.skip_reads:
            out["ncks1"] = run_timed(series_cmd(virtual), args.timeout)
            out["ncks2"] = run_timed(series_cmd(virtual), args.timeout)
            if not args.series_only:
                out["cat"] = cat_mb_per_s(virtual, args.timeout)
        out["rss_mib"] = vm_hwm_kib(proc.pid) / 1024.0
    finally:
        out["fds"] = fds.stop()
        subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.rmdir(mnt)
    return out


def fmt(v, unit="s"):
    if v is None:
        return "  (failed/timeout)"
    return "%9.3f %s" % (v, unit)


def report_aggregate(n, seconds, peak_mib):
    print("  ncafs aggregate       %s (peak RSS %.1f MiB, %.0f bytes/partition)"
          % (fmt(seconds), peak_mib, peak_mib * 1048576 / n))
    sys.stdout.flush()


def report(n, kind, figures, base, label=""):
    def ratio(key, base_key):
        v, b = figures.get(key), base.get(base_key)
        return "" if v is None or not b else "  x%.1f of local" % (v / b)

    print("N=%d %s%s" % (n, kind, "  [%s]" % label if label else ""))
    print("  mount -> first stat   %s (daemon CPU %.3f s)" % (fmt(figures["mount_stat"]), figures["mount_cpu"]))
    if "ncdump1" in figures:
        print("  ncdump -h first       %s%s" % (fmt(figures["ncdump1"]), ratio("ncdump1", "ncdump")))
        print("  ncdump -h second      %s%s" % (fmt(figures["ncdump2"]), ratio("ncdump2", "ncdump")))
    if "ncks1" in figures:
        print("  ncks series first     %s%s" % (fmt(figures["ncks1"]), ratio("ncks1", "ncks")))
        print("  ncks series second    %s%s" % (fmt(figures["ncks2"]), ratio("ncks2", "ncks")))
    if "cat" in figures:
        print("  cat                   %s" % fmt(figures["cat"], "MB/s"))
    if "inspect" in figures:
        print("  ncafs inspect         %s" % fmt(figures["inspect"]))
        print("  ncafs check           %s" % fmt(figures["check"]))
    if "aggregate" in figures:
        report_aggregate(n, *figures["aggregate"])
    print("  daemon peak RSS       %9.1f MiB (%.0f bytes/partition)" %
          (figures["rss_mib"], figures["rss_mib"] * 1048576 / n))
    print("  daemon open fds (max) %9d" % figures["fds"])
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ncafs")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ncafs-scale-bench"))
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--huge", action="store_true", help="also 1,000,000 partitions")
    p.add_argument("--skip-reads", action="store_true", help="no ncks/cat (they open every partition)")
    p.add_argument("--aggregate-only", action="store_true", help="only write and time the CF-1.13 aggregation")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--series-only", action="store_true",
                   help="only mount -> first stat and the ncks point series (first, second)")
    p.add_argument("--compare", metavar="NCAFS_BEFORE",
                   help="another binary measured in the same run, before each of NCAFS's mounts")
    args = p.parse_args()
    ncafs = os.path.abspath(args.ncafs)
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))  # inherited by the daemon and the clients
    sizes = [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.huge else [])
    for n in sizes:
        folder, aggregate_time = generate(args.work, ncafs, n)
        if args.aggregate_only:
            print("N=%d" % n)
            report_aggregate(n, *aggregate_time)
            continue
        local = os.path.join(folder, "local.nc")
        base = {"ncdump": run_timed(["ncdump", "-h", local], args.timeout)}
        if not args.skip_reads:
            base["ncks"] = run_timed(series_cmd(local), args.timeout)
        print("N=%d baselines on a local classic file: ncdump -h %s, ncks series %s" %
              (n, fmt(base["ncdump"]), "(skipped)" if args.skip_reads else fmt(base["ncks"])))
        binaries = ([(os.path.abspath(args.compare), "before")] if args.compare else []) + \
            [(ncafs, "after" if args.compare else "")]
        for kind, name in (("NCA JSON", "nca.nca"), ("CF-1.13", "cf.nc")):
            for binary, label in binaries:
                figures = measure_mount(binary, folder, name, args)
                path = os.path.join(folder, name)
                if not args.series_only:
                    figures["inspect"] = run_timed([binary, "inspect", path], args.timeout)
                    figures["check"] = run_timed([binary, "check", path], args.timeout)
                if kind == "CF-1.13" and binary == ncafs:
                    figures["aggregate"] = aggregate_time
                report(n, kind, figures, base, label)


if __name__ == "__main__":
    main()
