#!/usr/bin/python3
"""Reads across many partitions: the read side of a million partitions.

N tiny classic partitions (tests/e2e/tiny_partitions.py) aggregated as NCA
JSON or CF-1.13 are mounted with the daemon's RLIMIT_NOFILE lowered to
FD_LIMIT. A point time series (tas[:,0,0]) and the whole of tas are read
with netCDF4-python (a read spans thousands of partitions: they are read on
several threads) and compared with the values computed from the partition
formulas. Bounded:
  - the growth of the daemon's resident memory while the second half of
    tas is read, per partition, after the first half warmed it up
    (resolutions are kept only while their files may be open: before,
    ~1.3 KB stayed per partition read);
  - its open descriptors, sampled during the reads (under the limit).
Then a partition in the middle is removed: a read across it fails (EIO)
and the daemon's log names the file, while partitions well before it still
read right.

Run as: test_read_scale.py nca|cf   (NCAFS_BIN: the ncafs executable)
"""
import os
import resource
import shutil
import sys
import time

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_partitions as tp  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from scale_bench import FdSampler  # noqa: E402  (the most descriptors, sampled until stopped)
from test_mount import NCAFS, Mount, check, require_fuse  # noqa: E402

N = 20_000
FD_LIMIT = 128
# Growth while the second half is read, per partition (was ~1,400 before
# the compact resolution cache). Measured over the whole read it was
# 210-330 and mostly the warm-up of the pools' threads (their allocator
# caches), so the first half now warms up: -25 to 80 (NCA) and 0 (CF-1.13)
# in four runs of `ctest -R 'e2e_read_scale|e2e_descriptors|security_paths' -j3`
# on the sanitizer build; on the Release program it runs on now
# (tests/CMakeLists.txt): 20 (NCA) and -7 (CF-1.13), `NCAFS_BIN=build/package/cli/ncafs
# tests/e2e/test_read_scale.py nca|cf`.
RSS_BYTES_PER_PARTITION = 200


def status_bytes(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no %s for %d" % (field, pid))


def expected():
    return np.array([tp.expected_tas(i) for i in range(N)], dtype="f4").reshape(N, tp.NLAT, tp.NLON)


def build(work, kind):
    names = tp.write_partitions(os.path.join(work, "parts"), N)
    if kind == "nca":
        tp.write_nca(os.path.join(work, "agg.nca"), names)
    else:
        tp.write_cf(NCAFS, os.path.join(work, "agg.nc"), names)
    return names


def read_all(m, want):
    """The first half of tas warms the daemon up (its pools' threads, their
    allocator caches, the bounded caches filled); the growth while the
    second half is read is what each further partition leaves behind. Then
    the point series and the whole variable, against the formulas."""
    pid = m.process.pid
    half = N // 2
    with netCDF4.Dataset(m.path("agg.nc")) as ds:
        tas = ds["tas"]
        tas.set_auto_mask(False)
        check(tas.shape == want.shape, "shape %s" % (tas.shape,))
        fds = FdSampler(pid)
        first = tas[:half]
        before = status_bytes(pid, "VmRSS")
        second = tas[half:]
        after = status_bytes(pid, "VmRSS")
        series = tas[:, 0, 0]
        whole = tas[:]
        most_fds = fds.stop()
    check(np.array_equal(first, want[:half]) and np.array_equal(second, want[half:]),
          "tas read in halves differs from the partitions' values")
    check(np.array_equal(series, want[:, 0, 0]), "the point series differs from the partitions' values")
    check(np.array_equal(whole, want), "tas differs from the partitions' values")
    per = (after - before) / float(N - half)
    print("daemon RSS %.1f -> %.1f MiB over the second half: %.0f bytes per partition (bound %d); most fds %d (limit %d)" %
          (before / 1048576.0, after / 1048576.0, per, RSS_BYTES_PER_PARTITION, most_fds, FD_LIMIT))
    check(per < RSS_BYTES_PER_PARTITION, "the daemon kept %.0f bytes per partition read" % per)
    check(0 < most_fds < FD_LIMIT, "descriptors: %d with a limit of %d" % (most_fds, FD_LIMIT))


def read_with_one_missing(m, work, names, want):
    k = N // 2
    os.unlink(os.path.join(work, "parts", names[k]))
    # The partition watch tells the daemon (and the kernel's page cache of
    # the view) soon, not at once: a read across the partition fails within
    # 30 s, never giving other values meanwhile.
    deadline = time.time() + 30
    while True:
        with netCDF4.Dataset(m.path("agg.nc")) as ds:
            tas = ds["tas"]
            tas.set_auto_mask(False)
            # Far enough before it that no read (netcdf-c's pages, readahead) reaches it.
            check(np.array_equal(tas[: k // 4], want[: k // 4]), "the partitions before the missing one")
            try:
                got = tas[:]
            except (OSError, RuntimeError) as e:
                print("a read across the missing partition: %s" % e)
                break
        check(np.array_equal(got, want), "a read gave other values than the partitions'")
        check(time.time() < deadline, "a read across a missing partition still succeeds after 30 s")
        time.sleep(0.5)
    check(names[k] in m.log_text(), "the daemon's log does not name %s" % names[k])


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "nca"
    require_fuse()
    os.environ["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    work = tp.scratch_folder("ncafs-read-scale-", N * tp.FILE_BYTES)
    try:
        names = build(work, kind)
        want = expected()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, hard))  # inherited by the daemon
        try:
            with Mount(work) as m:
                read_all(m, want)
                read_with_one_missing(m, work, names, want)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
