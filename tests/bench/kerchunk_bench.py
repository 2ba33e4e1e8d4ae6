#!/usr/bin/python3
"""Benchmark (a program, not a test): one NCA aggregation of classic
partitions read whole by xarray in three ways, in the same run:

  refs   xarray + Dask over the reference set `ncafs export --format
         kerchunk` writes (engine="zarr", one Dask chunk per Zarr chunk,
         here one per record): no mount, the partitions read directly
  refs6  the same with one Dask chunk per partition (chunks={"time": 6})
  mount  xarray (netCDF4 engine) over the aggregation's .nc view on an
         ncafs mount
  mfds   xarray.open_mfdataset of the partition files (Dask, one chunk per file)

Each computes the mean and the maximum of tas over everything, warm (page
cache filled by a first untimed pass), best of REPEAT; prints seconds and the
ratios to `refs`. Values are checked equal between the three (float64 sums).

usage: kerchunk_bench.py [NCAFS_BINARY]   (a Release build; default: ncafs on PATH)
Needs python3-xarray, python3-dask, python3-zarr, python3-fsspec and /dev/fuse.
"""
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import xarray as xr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
if len(sys.argv) > 1:
    os.environ["NCAFS_BIN"] = os.path.abspath(sys.argv[1])
import make_aggregations  # noqa: E402
import test_mount  # noqa: E402

PARTS, PER_PART, LAT, LON = 48, 6, 180, 360
REPEAT = 3
warnings.filterwarnings("ignore")


def summary(ds):
    tas = ds["tas"].astype("f8")  # float64 sums: equal whatever the chunking
    return float(tas.mean().compute()), float(tas.max().compute())


def best(fn):
    fn()  # warm: page cache, imports, Dask's pool
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main():
    ncafs = os.environ.get("NCAFS_BIN", "ncafs")
    with tempfile.TemporaryDirectory(prefix="ncafs-kerchunk-bench-") as tmp:
        src = os.path.join(tmp, "src")
        make_aggregations.write_aggregation(
            src, "bench", ["time", "lat", "lon"], {"time": PARTS * PER_PART, "lat": LAT, "lon": LON},
            {"time": [PER_PART] * PARTS, "lat": [LAT], "lon": [LON]}, record_dim="time", coordinate="time")
        refs = os.path.join(tmp, "bench.json")
        subprocess.run([ncafs, "export", os.path.join(src, "bench.nca"), "--format", "kerchunk", "-o", refs],
                       check=True)
        parts = sorted(os.path.join(src, n) for n in os.listdir(src) if n.startswith("part_"))
        mbytes = PARTS * PER_PART * LAT * LON * 4 / 1e6

        def by_refs():
            with xr.open_dataset("reference://", engine="zarr", chunks={}, decode_times=False,
                                 backend_kwargs={"consolidated": False, "storage_options": {"fo": refs}}) as ds:
                return summary(ds)

        def by_refs6():
            with xr.open_dataset("reference://", engine="zarr", chunks={"time": PER_PART}, decode_times=False,
                                 backend_kwargs={"consolidated": False, "storage_options": {"fo": refs}}) as ds:
                return summary(ds)

        def by_mfds():
            with xr.open_mfdataset(parts, combine="nested", concat_dim="time", decode_times=False) as ds:
                return summary(ds)

        results = {}
        results["refs"] = best(by_refs)
        results["refs6"] = best(by_refs6)
        results["mfds"] = best(by_mfds)
        with test_mount.Mount(src) as m:
            def by_mount():
                with xr.open_dataset(m.path("bench.nc"), decode_times=False) as ds:
                    return summary(ds)
            results["mount"] = best(by_mount)
        values = {k: v[1] for k, v in results.items()}
        if not all(np.allclose(v, values["refs"], rtol=1e-12) for v in values.values()):
            sys.exit("values differ: %s" % values)
        print("tas %d partitions x %d steps x %d x %d float (%.0f MB), mean and max, warm, best of %d:"
              % (PARTS, PER_PART, LAT, LON, mbytes, REPEAT))
        base = results["refs"][0]
        for name in ("refs", "refs6", "mount", "mfds"):
            t = results[name][0]
            print("  %-6s %7.3f s  %7.1f MB/s  ratio to refs %.2f" % (name, t, mbytes / t, t / base))


if __name__ == "__main__":
    main()
