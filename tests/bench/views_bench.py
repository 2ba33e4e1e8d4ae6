#!/usr/bin/python3
"""Benchmark of the .ds views of an ncafs mount (a script, not a test).

Uses WORK (default /tmp/ncafs-bench, shared with fuse_bench.py, reused when
present): big/ (120 classic partitions, ~1 GiB, big.nca) and tiny/ (10,000
classic files holding one value each). Mounts WORK with the given ncafs
(Release build) and prints, measured in this one run:
  (a) cat of big.ds (the aggregation's raw ds view) vs cat of big.nc (its
      netCDF view), kernel cache of each dropped before each run, best of 3
  (b) 10,000 one-value datasets: open + read + decode the value of each
      tNNNNN.ds view (JSON header line, block at .offset, per ds-1.0) vs
      netCDF4-python (netcdf-c) reading the value of each tNNNNN.nc through
      the same mount; first pass (the daemon parses each file when its view
      is first looked up) and second pass

usage: views_bench.py NCAFS_BINARY [WORK]
"""
import json
import os
import shutil
import sys
import time

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuse_bench  # noqa: E402  (generator, Mount, timed, drop_cache)
import bench_cli  # noqa: E402

TINY = 10000


def log(msg):
    print(msg, flush=True)


def generate_tiny(folder):
    os.makedirs(folder, exist_ok=True)
    first = os.path.join(folder, "t00000.nc")
    if not os.path.exists(first):
        with netCDF4.Dataset(first, "w", format="NETCDF3_CLASSIC") as ds:
            ds.createVariable("v", "f8", ())[...] = 42.5
    for i in range(1, TINY):
        path = os.path.join(folder, "t%05d.nc" % i)
        if not os.path.exists(path):
            shutil.copyfile(first, path)


def read_ds_value(path):
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"\n", 7)
    v = json.loads(data[7:end])["v"]
    body = end + 1 + v[".offset"]
    dtype = np.dtype((">" if v[".endian"] == "b" else "<") + "f8")
    return float(np.frombuffer(data[body:body + v[".len"]], dtype=dtype)[0])


def read_nc_value(path):
    with netCDF4.Dataset(path) as ds:
        return float(ds.variables["v"][...])


def pass_over(folder, suffix, reader):
    t = time.perf_counter()
    for i in range(TINY):
        value = reader(os.path.join(folder, "t%05d%s" % (i, suffix)))
        if value != 42.5:
            raise SystemExit("t%05d%s: read %r, expected 42.5" % (i, suffix, value))
    return time.perf_counter() - t


def main():
    args = bench_cli.positional(__doc__, "/tmp/ncafs-bench")
    if args is None:
        return 2
    ncafs, work = args
    os.makedirs(work, exist_ok=True)
    log("generating in %s (reused when present) ..." % work)
    fuse_bench.generate_big(os.path.join(work, "big"))
    generate_tiny(os.path.join(work, "tiny"))

    m = fuse_bench.Mount(ncafs, work, "")
    try:
        nc = os.path.join(m.mnt, "big", "big.nc")
        ds = os.path.join(m.mnt, "big", "big.ds")
        size_nc, size_ds = os.path.getsize(nc), os.path.getsize(ds)
        for path in (nc, ds):  # warm the partitions' page cache and the daemon's caches
            fuse_bench.timed(["cat", path], 1)
        t_nc = fuse_bench.timed(["cat", nc], 3, fuse_bench.drop_cache(nc))
        t_ds = fuse_bench.timed(["cat", ds], 3, fuse_bench.drop_cache(ds))

        tiny = os.path.join(m.mnt, "tiny")
        t0 = time.perf_counter()
        names = os.listdir(tiny)
        t_list = time.perf_counter() - t0
        first_ds = pass_over(tiny, ".ds", read_ds_value)
        first_nc = pass_over(tiny, ".nc", read_nc_value)
        second_ds = pass_over(tiny, ".ds", read_ds_value)
        second_nc = pass_over(tiny, ".nc", read_nc_value)
        rss = m.peak_rss_kib()
    finally:
        m.close()

    log("")
    log("(a) cat of the aggregation's views (kernel cache dropped before each run; best of 3)")
    log("    big.nc %.2f GiB %6.2f s %7.0f MiB/s" % (size_nc / 2**30, t_nc, size_nc / 2**20 / t_nc))
    log("    big.ds %.2f GiB %6.2f s %7.0f MiB/s" % (size_ds / 2**30, t_ds, size_ds / 2**20 / t_ds))
    log("    ratio throughput ds/nc = %.2f" % ((size_ds / t_ds) / (size_nc / t_nc)))
    log("(b) %d one-value datasets through the mount (listing of %d names: %.3f s)" % (TINY, len(names), t_list))
    log("    first pass:  .ds views %.2f s, .nc files with netCDF4-python %.2f s, ratio nc/ds = %.2f"
        % (first_ds, first_nc, first_nc / first_ds))
    log("    second pass: .ds views %.2f s, .nc files with netCDF4-python %.2f s, ratio nc/ds = %.2f"
        % (second_ds, second_nc, second_nc / second_ds))
    log("(c) daemon peak RSS %.1f MiB" % (rss / 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
