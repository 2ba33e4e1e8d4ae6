#!/usr/bin/python3
"""Reads of aggregations of many tiny classic partitions through real mounts
(docs/performance.md "Many partitions").

Run as: test_many_partitions.py CASE   (CASE: syscalls, cf_series, nca_series, numrecs, replaced)
  syscalls  strace -c -f attached to the daemon counts the system calls of a
            fresh read of a 2,000-partition aggregation (cat) and of a second
            O_DIRECT read while every partition is still open: per-partition
            bounds on openat/openat2/newfstatat/readlink/pread64/access
            (counts, not times); the bytes read, and netCDF4-python's values,
            equal the generator's formulas.
  cf_series an ncks point series (tas[:,0,0]) of a CF-1.13 aggregation of
            10,000 one-step partitions (`ncafs aggregate`), whose `time` is
            aggregated too (one value a partition: the view's first block
            and the one where tas begins hold `time` values), strace'd for
            openat2: every partition opened once; the values equal the
            formulas. Then a `cat` of the view on a fresh mount: once too.
  nca_series the same of an NCA aggregation, whose `time` is a file extent
            of the aggregation file: ncks's first read of tas holds the end
            of `time` too (an extent beside computed bytes), and the next
            read the same block of tas.
  numrecs   partitions that share a header layout except numrecs (1, 3, 2
            records): the view's values equal netCDF4-python's of the
            partitions, NCO ncrcat's concatenation and the formulas.
  replaced  a partition kept open, a symlink, is switched to another file,
            then removed: the next reads give the new values, then EIO.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_many_partitions  # noqa: E402
import tiny_partitions as tp  # noqa: E402
from test_mount import NCAFS, Mount, check, read_netcdf4, run_cases, SKIP  # noqa: E402


def strace_counts(path):
    """{syscall: calls} from an strace -c summary."""
    counts = {}
    for line in open(path):
        fields = line.split()
        if len(fields) >= 5 and re.match(r"^[\d.]+$", fields[0]) and fields[-1] != "total":
            counts[fields[-1]] = int(fields[3])
    return counts


def ptrace_scope():
    """Why an attach may be refused: Yama's ptrace_scope, when the kernel has it."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return "kernel.yama.ptrace_scope = " + f.read().strip()
    except OSError:
        return "no Yama ptrace_scope"


class Traced:
    """strace -c -f attached to every thread of pid while the block runs
    (with `calls`: strace -f -e trace=CALLS, every call written to out)."""

    def __init__(self, pid, out, calls=None):
        self.pid, self.out, self.calls = pid, out, calls

    def __enter__(self):
        if shutil.which("strace") is None:
            print("SKIPPED: strace is not installed (packaging/install-deps.sh installs it): no system-call counts")
            sys.exit(SKIP)
        what = ["-e", "trace=" + self.calls] if self.calls else ["-c"]
        self.tracer = subprocess.Popen(["strace"] + what + ["-f", "-p", str(self.pid), "-o", self.out],
                                       stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not self.all_traced():
            if self.tracer.poll() is not None:
                print("SKIPPED: strace cannot attach to the daemon (%s): %s"
                      % (ptrace_scope(), self.tracer.stderr.read().strip()))
                sys.exit(SKIP)
            check(time.time() < deadline, "strace did not attach within 60 s")
            time.sleep(0.05)
        return self

    def all_traced(self):
        tasks = os.listdir("/proc/%d/task" % self.pid)
        for tid in tasks:
            with open("/proc/%d/task/%s/status" % (self.pid, tid)) as f:
                tracer = [line.split()[1] for line in f if line.startswith("TracerPid:")]
            if tracer != [str(self.tracer.pid)]:
                return False
        return True

    def __exit__(self, *exc):
        self.tracer.send_signal(signal.SIGINT)
        self.tracer.wait(timeout=60)
        self.counts = {} if self.calls else strace_counts(self.out)
        return False


def direct_read(path):
    """The whole file through O_DIRECT (every byte a request to the daemon)."""
    out = subprocess.run(["dd", "if=" + path, "iflag=direct", "bs=1M", "status=none"], capture_output=True,
                         check=True)
    return out.stdout


def per_partition(counts, n, *names):
    return sum(counts.get(name, 0) for name in names) / n


def case_syscalls(work):
    n = 2000
    src = os.path.join(work, "src")
    os.makedirs(src)
    make_many_partitions.write(src, n)
    # Files changed within the last second are read twice on purpose
    # (io/open_file.hpp): the test-only switch closes that window for the
    # daemon, so that the counts are one read's.
    os.environ["NCAFS_TEST_SETTLE_MS"] = "0"
    want = make_many_partitions.expected(n, (1,)).astype(">f4").tobytes()
    # open_files above n: the second read finds every partition still open.
    with Mount(src, "open_files=%d" % (n + 100)) as m:
        view = m.path("many.nc")
        os.stat(view)  # the aggregation parsed; no partition opened
        with Traced(m.process.pid, os.path.join(work, "fresh.txt")) as fresh:
            data = subprocess.run(["cat", view], capture_output=True, check=True).stdout
        check(data.endswith(want), "the view's data section differs from the partitions' values")
        with Traced(m.process.pid, os.path.join(work, "again.txt")) as again:
            check(direct_read(view) == data, "a second read gave other bytes")
        got = read_netcdf4(view, "v")
        check(np.array_equal(got, make_many_partitions.expected(n, (1,))), "netCDF4-python reads other values")
    for label, c in (("fresh", fresh.counts), ("again", again.counts)):
        print("%s read, per partition: %s" % (label, ", ".join(
            "%s %.2f" % (k, v / n) for k, v in sorted(c.items(), key=lambda kv: -kv[1])[:10])))
    f, a = fresh.counts, again.counts
    # Fresh: the partition alone (openat2 beneath the root's held fd: the
    # root is not opened again per partition); one fstat, after the first
    # read (OpenFile::open_with_head); no symlink walk (readlink), no access(2) beyond the
    # view open's (a faccessat from the partition's folder, opened
    # confined), one close (when the cache drops it).
    check(per_partition(f, n, "openat", "openat2", "open") <= 1.1, "opens per partition: %s" % f)
    check(per_partition(f, n, "close") <= 1.1, "closes per partition: %s" % f)
    check(per_partition(f, n, "newfstatat", "fstat", "statx") <= 1.1, "stats per partition: %s" % f)
    check(per_partition(f, n, "readlink", "readlinkat") <= 0.05, "readlinks per partition: %s" % f)
    # One pread: the first bytes (sniff, header and, in a file this small,
    # the data the read wants: OpenFile::keep_first_read).
    check(per_partition(f, n, "pread64") <= 1.1, "preads per partition: %s" % f)
    check(per_partition(f, n, "access", "faccessat", "faccessat2") <= 1.1, "access(2) per partition: %s" % f)
    # Nothing else to speak of: the threads that read partitions together
    # neither contend (futex) nor start per partition (clone3, mmap).
    expected = ("openat", "openat2", "open", "newfstatat", "fstat", "statx", "pread64", "access", "faccessat",
                "faccessat2", "close")
    others = {k: v for k, v in f.items() if k not in expected}
    check(sum(others.values()) / float(n) <= 1.0, "other system calls per partition: %s" % others)
    # Again, every partition open: one pread and one fstat (after it) each.
    check(per_partition(a, n, "openat", "openat2", "open") <= 0.05, "opens per partition, again: %s" % a)
    check(per_partition(a, n, "newfstatat", "fstat", "statx") <= 1.1, "stats per partition, again: %s" % a)
    check(per_partition(a, n, "pread64") <= 1.1, "preads per partition, again: %s" % a)
    check(per_partition(a, n, "access", "faccessat", "faccessat2") <= 0.05, "access(2) again: %s" % a)


def opens_per_partition(trace):
    """{partition file name: openat2 calls} from an strace -e trace=openat2 output."""
    counts = {}
    with open(trace) as f:
        for name in re.findall(r'openat2\(\d+, "[^"]*?(part_\d+\.nc)"', f.read()):
            counts[name] = counts.get(name, 0) + 1
    return counts


def check_opened_once(trace, n, what):
    counts = opens_per_partition(trace)
    again = sorted(name for name, c in counts.items() if c > 1)
    print("%s: %d partitions opened, %d more than once (%s)" % (what, len(counts), len(again), " ".join(again[:5])))
    check(len(counts) == n, "%s opened %d of the %d partitions" % (what, len(counts), n))
    check(not again, "%s opened %d partitions more than once, e.g. %s" % (what, len(again), again[:5]))


def check_series_and_cat_open_once(work, src, view_name, n):
    """An ncks point series of tas, then a `cat` on a fresh mount, open every partition once."""
    os.environ["NCAFS_TEST_SETTLE_MS"] = "0"  # as in case_syscalls: one read of each file
    with Mount(src, "open_files=128") as m:
        view = m.path(view_name)
        os.stat(view)  # the aggregation parsed; no partition opened
        with Traced(m.process.pid, os.path.join(work, "series.txt"), "openat2"):
            subprocess.run(["ncks", "-O", "-H", "-C", "-v", "tas", "-d", "lat,0", "-d", "lon,0", view],
                           stdout=subprocess.DEVNULL, check=True)
        series = read_netcdf4(view, "tas")[:, 0, 0]
    check_opened_once(os.path.join(work, "series.txt"), n, "the point series")
    check(np.array_equal(series, np.array([tp.expected_tas(i)[0] for i in range(n)], dtype="f4")),
          "the point series differs from the partitions' values")
    with Mount(src, "open_files=128") as m:
        view = m.path(view_name)
        os.stat(view)
        with Traced(m.process.pid, os.path.join(work, "cat.txt"), "openat2"):
            subprocess.run(["cat", view], stdout=subprocess.DEVNULL, check=True)
    check_opened_once(os.path.join(work, "cat.txt"), n, "cat")


def case_cf_series(work):
    """Before, the series opened the first 8,161 partitions twice (the view's
    first 64 KiB block, read at ncks's open, holds their `time` values;
    their tas was read later, long after the dataset cache closed them) and
    the last ones whose `time` lies in the block where tas begins."""
    n = 10_000
    src = os.path.join(work, "src")
    names = tp.write_partitions(os.path.join(src, "parts"), n)
    tp.write_cf(NCAFS, os.path.join(src, "agg.nc"), names)
    check_series_and_cat_open_once(work, src, "agg.nc", n)


def case_nca_series(work):
    """Before, the series opened the partitions of ncks's first read of tas
    twice: that read also held the end of `time` (a file extent) and was
    computed outside the block cache; the next read computed the same block."""
    # tas begins at byte 248 + 8 n of the view: with 10,300 partitions 3,368
    # bytes of the page ncks reads first (210 partitions) are tas, more than
    # the 128 files kept open (with 10,000, 104: the next read found them open).
    n = 10_300
    src = os.path.join(work, "src")
    names = tp.write_partitions(os.path.join(src, "parts"), n)
    tp.write_nca(os.path.join(src, "agg.nca"), names)
    check_series_and_cat_open_once(work, src, "agg.nc", n)


def case_replaced(work):
    """Partitions are kept open between reads and checked by the identity of
    the open file. A partition that is a symlink switched to another file
    leaves the old file's identity intact: only the partition watch tells,
    and the next reads give the new file's values; then the symlink is
    removed and the reads fail with EIO."""
    n = 50
    src = os.path.join(work, "src")
    os.makedirs(src)
    make_many_partitions.write(src, n)
    want = make_many_partitions.expected(n, (1,))
    part = os.path.join(src, "part", "p%06d.nc" % 7)
    os.rename(part, os.path.join(src, "part", "old7.nc"))
    with open(os.path.join(src, "part", "new7.nc"), "wb") as f:
        f.write(make_many_partitions.classic_partition(1, 7 + 1000))  # other values, same layout
    os.symlink("old7.nc", part)
    replaced = want.copy()
    replaced[7] = make_many_partitions.values(1, 7 + 1000)[0]
    with Mount(src, "open_files=1000") as m:
        view = m.path("many.nc")
        check(np.array_equal(read_netcdf4(view, "v"), want), "values before the switch")
        os.symlink("new7.nc", part + ".tmp")
        os.replace(part + ".tmp", part)
        deadline = time.time() + 30  # the partition watch reports asynchronously
        while True:
            got = np.frombuffer(direct_read(view)[-want.nbytes:], dtype=">f4").reshape(want.shape)
            if np.array_equal(got, replaced):
                break
            check(np.array_equal(got, want), "a read gave neither the old nor the new values")
            check(time.time() < deadline, "the switched partition is still read from its old file after 30 s")
            time.sleep(0.2)
        os.unlink(part)
        deadline = time.time() + 30
        while True:
            try:
                direct_read(view)
            except subprocess.CalledProcessError:
                break  # EIO: the removed partition is not served from the descriptor kept open
            check(time.time() < deadline, "the removed partition is still served after 30 s")
            time.sleep(0.2)


def case_numrecs(work):
    n, pattern = 60, (1, 3, 2)
    src = os.path.join(work, "src")
    os.makedirs(src)
    make_many_partitions.write(src, n, pattern)
    want = make_many_partitions.expected(n, pattern)
    parts = sorted(os.path.join(src, "part", p) for p in os.listdir(os.path.join(src, "part")))
    from_partitions = np.concatenate([read_netcdf4(p, "v") for p in parts])
    check(np.array_equal(from_partitions, want), "netCDF4-python reads the partitions as the formulas say")
    rcat = os.path.join(work, "ncrcat.nc")
    subprocess.run(["ncrcat", "-O"] + parts + [rcat], check=True, capture_output=True)
    with Mount(src) as m:
        view = m.path("many.nc")
        got = read_netcdf4(view, "v")
        check(got.shape == want.shape, "shape %s, want %s" % (got.shape, want.shape))
        check(np.array_equal(got, want), "the view differs from the formulas")
        check(np.array_equal(got, read_netcdf4(rcat, "v")), "the view differs from ncrcat's concatenation")
        # Reads of one record at a time cross partitions of every numrecs.
        import netCDF4
        with netCDF4.Dataset(view) as ds:
            for t in range(0, want.shape[0], 7):
                check(np.array_equal(ds.variables["v"][t], want[t]), "record %d" % t)


CASES = {"syscalls": case_syscalls, "cf_series": case_cf_series, "nca_series": case_nca_series, "numrecs": case_numrecs, "replaced": case_replaced}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-many-"))
