#!/usr/bin/python3
"""xarray + Dask over an aggregation's `.zarr` view against its `.nc` view
and against open_mfdataset of the partitions, in one run (a script, not a
test).

Each reader computes the mean and the maximum of tas over everything in one
Dask pass (float64; values checked equal between readers):

  mfds      xarray.open_mfdataset of the partition files (one Dask chunk per
            file): the baseline, no mount
  zarr      xarray.open_zarr of MNT/NAME.zarr, one Dask chunk per Zarr chunk
  zarr-part the same with one Dask chunk per partition's steps
  nc        xarray.open_dataset of MNT/NAME.nc, one Dask chunk per partition's
            steps (the netCDF4 engine, whose reads xarray serialises)

cold: a fresh mount (no cache of ours) and the page cache dropped before
each run (echo 3 > /proc/sys/vm/drop_caches as root; else posix_fadvise
DONTNEED of the files, said so); warm: one untimed run first, same mount.
Each timing REPEATS times (default 3), median and best; ratio = reader /
mfds of the same mode (below 1: faster than open_mfdataset). With --before
OLD_NCAFS the mount's readers run again with that binary, in this run.

Generates in WORK (default /tmp/ncafs-zarr-bench, reused when present) the
backings of netcdf_clients_bench.py: cdf (48 classic partitions of 24 steps
x 180x360 float, 298 MiB) and netcdf4 (36 deflated netCDF-4 partitions of 30
steps x 96x128, a 53 MB view), each aggregated by `ncafs aggregate`.

usage: zarr_bench.py NCAFS_BINARY [WORK] [REPEATS] [--before OLD_NCAFS] [--backing cdf|netcdf4]
"""
import os
import statistics
import subprocess
import sys
import time
import warnings

import dask
import numpy as np
import xarray as xr

import bench_cli
from netcdf_clients_bench import Mount, drop_caches, log, write_cdf_partitions, write_netcdf4_partitions

warnings.filterwarnings("ignore")
BACKINGS = {"cdf": ("src", "daily", write_cdf_partitions, 24),
            "netcdf4": ("nc4", "monthly", write_netcdf4_partitions, 30)}


def summary(ds):
    tas = ds["tas"].astype("f8")
    mean, top = dask.compute(tas.mean().data, tas.max().data)
    return float(mean), float(top)


READERS = ("zarr", "zarr-part", "nc")


def readers(mnt, name, steps):
    """{label: function reading through the mount} of each way in."""
    store, view = os.path.join(mnt, name + ".zarr"), os.path.join(mnt, name + ".nc")

    def zarr_native():
        with xr.open_zarr(store, decode_times=False) as ds:
            return summary(ds)

    def zarr_part():
        with xr.open_zarr(store, chunks={"time": steps}, decode_times=False) as ds:
            return summary(ds)

    def nc():
        with xr.open_dataset(view, chunks={"time": steps}, decode_times=False) as ds:
            return summary(ds)
    return dict(zip(READERS, (zarr_native, zarr_part, nc)))


def timed(fn, results):
    start = time.perf_counter()
    results.append(fn())
    return time.perf_counter() - start


def baseline(partitions, mode, repeats, results):
    def mfds():
        with xr.open_mfdataset(partitions, combine="nested", concat_dim="time", decode_times=False) as ds:
            return summary(ds)
    if mode == "warm":
        mfds()
    times = []
    for _ in range(repeats):
        if mode == "cold":
            drop_caches(partitions)
        times.append(timed(mfds, results))
    return times


def stored_chunks_option(binary):
    """The option that keeps a view's chunks as the files store them (spliced), where BINARY has it."""
    usage = subprocess.run([binary, "--help"], capture_output=True, text=True)
    return "zarr_chunks=stored" if "zarr_chunks" in usage.stdout + usage.stderr else None


def through_mount(binary, source, name, steps, partitions, mode, repeats, results):
    """{reader: [seconds]} for each reader through a mount of BINARY."""
    times = {label: [] for label in READERS}
    options = stored_chunks_option(binary)
    for label in READERS:
        if mode == "warm":
            with Mount(binary, source, options) as m:
                fn = readers(m.mnt, name, steps)[label]
                fn()
                times[label] = [timed(fn, results) for _ in range(repeats)]
        for _ in range(repeats if mode == "cold" else 0):
            with Mount(binary, source, options) as m:  # a fresh daemon: nothing cached
                fn = readers(m.mnt, name, steps)[label]
                drop_caches(partitions)
                times[label].append(timed(fn, results))
    return times


def report(backing, mode, variant, label, times, base):
    med, best = statistics.median(times), min(times)
    log("%-8s %-4s %-7s %-10s %7.3f s (best %7.3f) | ratio to mfds %5.2f (best %5.2f)" %
        (backing, mode, variant, label, med, best, med / statistics.median(base), best / min(base)))


def bench_backing(backing, work, ncafs, before, repeats):
    folder, stem, write, steps = BACKINGS[backing]
    source = os.path.join(work, folder)
    os.makedirs(source, exist_ok=True)
    partitions = write(source)
    name = stem + ".nc"
    if not os.path.exists(os.path.join(source, name)):
        subprocess.run([ncafs, "aggregate", "-o", os.path.join(source, name)] + partitions, check=True,
                       stdout=subprocess.DEVNULL)
    size = sum(os.path.getsize(p) for p in partitions)
    log("%s: %d partitions, %d MiB" % (backing, len(partitions), size >> 20))
    variants = [("after", ncafs)] + ([("before", before)] if before else [])
    results = []
    for mode in ("cold", "warm"):
        base = baseline(partitions, mode, repeats, results)
        report(backing, mode, "", "mfds", base, base)
        for variant, binary in variants:
            for label, times in through_mount(binary, source, stem, steps, partitions, mode, repeats,
                                              results).items():
                report(backing, mode, variant, label, times, base)
    if not all(np.allclose(r, results[0], rtol=1e-12) for r in results):
        sys.exit("the readers disagree: %s" % sorted(set(results)))


def main():
    flags = bench_cli.comparison_flags(__doc__)
    if flags is None:
        return 0
    before, only = flags
    args = bench_cli.positional(__doc__, "/tmp/ncafs-zarr-bench", 3)
    if args is None:
        return 2
    ncafs, work, repeats = args
    os.makedirs(work, exist_ok=True)
    log("page cache dropped with %s; ratio = reader / open_mfdataset of the partitions, same mode" %
        ("/proc/sys/vm/drop_caches" if os.geteuid() == 0 else "posix_fadvise DONTNEED (not root)"))
    for backing in [only] if only else list(BACKINGS):
        bench_backing(backing, work, ncafs, before and os.path.abspath(before), repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
