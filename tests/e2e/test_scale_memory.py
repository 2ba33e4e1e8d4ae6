#!/usr/bin/python3
"""Daemon memory per partition stays bounded (1,000,000 partitions must fit
in 512 MiB).

Tiny classic partitions (CDF-1 bytes, tests/e2e/tiny_partitions.py) are
aggregated as NCA JSON (written here) and as CF-1.13 (`ncafs aggregate
--files-from`), each at a small and a large count. Each aggregation is
mounted, its virtual file stat'ed and its header read, and the values of
one partition compared with the ones written. The daemon's peak RSS
(VmHWM, /proc/PID/status) is read right after the stat: what loading the
declared metadata costs (opening the file adds the access and partition
watch lists of the fs layer, printed but not bounded here). The growth from the small to the large
aggregation, per added partition, must stay under BYTES_PER_PARTITION
(the mount's fixed cost cancels out). Run on a sanitizer build, ASan's
quarantine is switched off for the daemon (it would hold freed parse
temporaries, up to 256 MiB).

Run as: test_scale_memory.py nca|cf   (NCAFS_BIN: the ncafs executable)
"""
import os
import shutil
import subprocess
import sys

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_partitions as tp  # noqa: E402
from test_mount import NCAFS, SKIP, Mount, check, fuse_usable  # noqa: E402

# Growth of the daemon's peak RSS per partition when loaded for a stat, in
# the Release program the .deb ships (tests/CMakeLists.txt): the partition
# table (~60 bytes), the aggregation file's JSON text while it is parsed
# (~150 bytes a partition, freed after the parse; the CF term arrays), the
# partition grid, the per-partition read slot and the parse's temporaries;
# for NCA also simdjson's structural index while the JSON is parsed (4 bytes
# for each of the ~50 structural characters of a partition here, freed after
# the parse). Measured 427 (NCA) and 384 (CF-1.13: two aggregated variables,
# time and tas, so two fragments a partition) with
# `NCAFS_BIN=build/package/cli/ncafs tests/e2e/test_scale_memory.py nca|cf`;
# 503 and 567 in the sanitizer build, whose bounds were 600 and 800.
BYTES_PER_PARTITION = {"nca": 540, "cf": 500}
COUNTS = {"nca": (2_000, 200_000), "cf": (2_000, 50_000)}


def vm_hwm_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM for %d" % pid)


def peak_after_loading(folder, name, n):
    """Mount folder, stat and read the aggregation; the daemon's VmHWM."""
    with Mount(folder) as m:
        virtual = m.path(os.path.splitext(name)[0] + ".nc")
        check(os.stat(virtual).st_size > 0, "%s is empty" % virtual)
        peak = vm_hwm_bytes(m.process.pid)  # the declared metadata, loaded for the stat
        with netCDF4.Dataset(virtual) as ds:
            check(ds["tas"].shape == (n, tp.NLAT, tp.NLON), "shape %s" % (ds["tas"].shape,))
            last = ds["tas"][n - 1]
            check(np.array_equal(np.asarray(last).ravel(), np.array(tp.expected_tas(n - 1), dtype="f4")),
                  "partition %d reads %s" % (n - 1, last))
        print("%s: after opening and reading it: %.1f MiB" % (name, vm_hwm_bytes(m.process.pid) / 1048576.0))
        return peak


def build(work, kind, n):
    folder = os.path.join(work, "%s%d" % (kind, n))
    names = tp.write_partitions(os.path.join(folder, "parts"), n)
    if kind == "nca":
        tp.write_nca(os.path.join(folder, "agg.nca"), names)
        return folder, "agg.nca"
    tp.write_cf(NCAFS, os.path.join(folder, "agg.nc"), names)
    return folder, "agg.nc"


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "nca"
    reason = fuse_usable()
    if reason:
        if os.environ.get("NCAFS_SKIP_FUSE") == "1":
            print("SKIPPED: " + reason)
            sys.exit(SKIP)
        check(False, reason + " (this test mounts real file systems; set NCAFS_SKIP_FUSE=1 to skip it)")
    os.environ["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    small_n, big_n = COUNTS[kind]
    work = tp.scratch_folder("ncafs-scale-mem-", big_n * tp.FILE_BYTES)
    try:
        peaks = {}
        for n in (small_n, big_n):
            folder, name = build(work, kind, n)
            peaks[n] = peak_after_loading(folder, name, n)
            shutil.rmtree(folder)
            print("%s: %d partitions: daemon peak RSS %.1f MiB" % (kind, n, peaks[n] / 1048576.0))
        per = (peaks[big_n] - peaks[small_n]) / float(big_n - small_n)
        print("%s: %.0f bytes per added partition (bound %d)" % (kind, per, BYTES_PER_PARTITION[kind]))
        check(per < BYTES_PER_PARTITION[kind],
              "%s: the daemon grows by %.0f bytes per partition, more than %d" % (kind, per, BYTES_PER_PARTITION[kind]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
