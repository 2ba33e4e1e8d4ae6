#!/usr/bin/python3
"""What a listing names, through real FUSE mounts.

Run as: test_listing.py CASE   (CASE: served, once, quiet, lods, cached)
  served  every name a listing gives stats (ls -l and find | xargs stat exit
          0) over unparsable and hostile files and datasets that some views
          cannot hold (char, int64 or scalar only; a .vds of over 2^20 chunks)
  once    a netCDF-4 aggregation NAME.nc is listed once, not also as
          NAME.classic.nc; a netCDF-4 dataset NAME.nc keeps its classic view
  quiet   ls -lR and reads of a healthy, realistic collection write no log
          line beyond startup (the default level, foreground, stderr)
  lods    with lods=N, LOD views only for aggregations and for datasets
          holding more than lod_min_size bytes
  cached  a second listing opens no file: the pre-check and the views'
          verdicts are cached by identity (strace; SKIPPED when it cannot
          attach)
Environment: NCAFS_BIN, NCAFS_SKIP_FUSE=1 (exit 77 where /dev/fuse is unusable).

The expectations are computed here from what each file holds, not from ncafs.
"""
import os
import subprocess
import sys

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_aggregations  # noqa: E402
import make_realistic  # noqa: E402
import test_missing_partitions  # noqa: E402
from test_many_partitions import Traced  # noqa: E402
from test_mount import NCAFS, Mount, check, run_cases  # noqa: E402


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def dataset(path, fmt, variables):
    """variables: {name: (dtype, {dim: length})}; values 0, 1, 2, ..."""
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        for _, (_, dims) in variables.items():
            for d, n in dims.items():
                if d not in ds.dimensions:
                    ds.createDimension(d, n)
        for name, (dtype, dims) in variables.items():
            v = ds.createVariable(name, dtype, tuple(dims))
            if dtype == "S1":
                v[...] = np.full([n for n in dims.values()], b"x", dtype="S1")
            else:
                v[...] = np.arange(int(np.prod(list(dims.values()) or [1]))).reshape(list(dims.values()) or ())


def unservable_collection(src):
    """Files whose views a lookup could not serve before: {name: views a
    listing may show of it (besides its own name)}."""
    os.makedirs(src)
    write(os.path.join(src, "garbage.nc"), b"CDF\x01" + os.urandom(60))
    # A classic header claiming 2^31-1 variables in 32 bytes.
    write(os.path.join(src, "claims.nc"), b"CDF\x01" + b"\0" * 20 + b"\0\0\0\x0b\x7f\xff\xff\xff")
    write(os.path.join(src, "empty4.nc4"), b"\x89HDF\r\n\x1a\n" + b"\0" * 200)
    write(os.path.join(src, "broken.ds"), b"ds-1.0\n{\"dimensions\": [")
    write(os.path.join(src, "broken.ncs"), b"CDFS\xad\xec\xce\xda" + b"\xff" * 40)
    dataset(os.path.join(src, "chars.nc"), "NETCDF3_CLASSIC", {"c": ("S1", {"n": 4, "len": 3})})
    dataset(os.path.join(src, "wide.nc"), "NETCDF3_64BIT_DATA", {"cnt64": ("i8", {"y": 3, "x": 4})})
    dataset(os.path.join(src, "scalar.nc"), "NETCDF3_CLASSIC", {"s": ("f4", {})})
    dataset(os.path.join(src, "good.nc"), "NETCDF3_CLASSIC", {"t": ("f4", {"y": 6, "x": 5})})
    # 2^19 x 2^19 floats, nothing written: a tiny file whose .vds view would
    # need 2^22 chunks (tiles of 256 x 256), beyond the 2^20 bound.
    with netCDF4.Dataset(os.path.join(src, "huge.nc"), "w", format="NETCDF4") as ds:
        ds.createDimension("y", 1 << 19)
        ds.createDimension("x", 1 << 19)
        ds.createVariable("v", "f4", ("y", "x"), chunksizes=(1024, 1024))
    make_aggregations.split_2d(os.path.join(src, "agg"))


def check_absent(path, why):
    """A name that must not resolve (it is not listed)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return
    check(False, "%s resolves: %s" % (path, why))


def listed_names(root):
    names = []
    for folder, dirs, files in os.walk(root):
        names += [os.path.join(folder, f) for f in files]
    return names


def case_served(work):
    src = os.path.join(work, "src")
    unservable_collection(src)
    with Mount(src) as m:
        ls = subprocess.run(["ls", "-lR", m.mnt], capture_output=True, text=True)
        check(ls.returncode == 0, "ls -lR exited %d: %s" % (ls.returncode, ls.stderr))
        check("?" not in ls.stdout, "ls -l printed unknown attributes:\n" + ls.stdout)
        find = subprocess.run("find %s -type f -print0 | xargs -0 stat > /dev/null" % m.mnt, shell=True,
                              capture_output=True, text=True)
        check(find.returncode == 0, "find | xargs stat exited %d: %s" % (find.returncode, find.stderr))
        for path in listed_names(m.mnt):
            os.stat(path)  # raises when a listed name does not resolve
        names = set(os.listdir(m.mnt))
        # Real files are listed as themselves, whatever they hold.
        for n in ("garbage.nc", "claims.nc", "empty4.nc4", "broken.ds", "broken.ncs", "chars.nc", "wide.nc",
                  "scalar.nc", "good.nc", "huge.nc"):
            check(n in names, n + " is not listed")
        # No view of a file that does not parse.
        for stem in ("garbage", "claims", "empty4", "broken"):
            for ext in (".ds", ".ncs", ".vds", ".classic.nc"):
                if stem + ext not in ("broken.ds", "broken.ncs"):
                    check(stem + ext not in names, stem + ext + " is listed: its source does not parse")
        check("empty4.nc" not in names, "empty4.nc is listed: its source does not parse")
        # Datasets: every view that can hold them; no .vds without a VDS type
        # (char, int64 only) or beyond 2^20 chunks.
        for n in ("good.ds", "good.ncs", "good.vds", "chars.ds", "chars.ncs", "wide.ds", "wide.ncs", "huge.ds",
                  "huge.classic.nc"):
            check(n in names, n + " is not listed")
        for n in ("chars.vds", "wide.vds", "huge.vds"):
            check(n not in names, n + " is listed: no .vds view can hold it")
        for n in ("chars.vds", "huge.vds", "garbage.ds"):
            check_absent(m.path(n), "it is not listed")
        agg = set(os.listdir(m.path("agg")))
        for n in ("tiles.nc", "tiles.ds", "tiles.ncs", "tiles.vds"):
            check(n in agg, "agg/" + n + " is not listed")


def case_once(work):
    src = os.path.join(work, "src")
    make_aggregations.write_aggregation(src, "agg4", ["time", "x"], {"time": 8, "x": 7},
                                        {"time": [3, 5], "x": [7]}, var="v", dtype="i4",
                                        nca_format="NETCDF4", nca_suffix=".nc")
    dataset(os.path.join(src, "single4.nc"), "NETCDF4", {"v": ("f4", {"y": 3, "x": 2})})
    with Mount(src) as m:
        names = sorted(os.listdir(m.mnt))
        check(names.count("agg4.nc") == 1, "agg4.nc listed %d times" % names.count("agg4.nc"))
        check("agg4.classic.nc" not in names, "the netCDF-4 aggregation agg4.nc is also listed as agg4.classic.nc")
        check_absent(m.path("agg4.classic.nc"), "a second name of the aggregation's view")
        with netCDF4.Dataset(m.path("agg4.nc")) as ds:
            check(ds.data_model.startswith("NETCDF3"), "agg4.nc is not the classic view: " + ds.data_model)
        # A netCDF-4 dataset NAME.nc keeps its bytes and has its classic view beside it.
        check("single4.nc" in names and "single4.classic.nc" in names, "single4.nc or its classic view missing")
        views = [n for n in names if n.startswith("agg4.")]
        check(views == ["agg4.ds", "agg4.nc", "agg4.ncs", "agg4.vds", "agg4.zarr"], "views of agg4: %s" % views)


# The only lines a healthy mount writes at the default level (docs/logs.md):
# "serving SOURCE at MOUNTPOINT..." at start and "unmounted MOUNTPOINT" at the end.
def startup_lines(log):
    return [line for line in log.splitlines() if line.strip() and not line.startswith("ncafs: info: serving ")]


def healthy_collection(src):
    """A healthy, realistic folder: aggregations with an UNLIMITED time (NCA
    of classic partitions; CF-1.13 of 36 deflated netCDF-4 partitions written
    by `ncafs aggregate`), CF attributes, sub-folders, int64 and char
    variables (which the .vds views leave out) in CDF-5 and netCDF-4 files."""
    make_realistic.write(os.path.join(src, "realistic"))
    for name, make in make_aggregations.ALL.items():
        make(os.path.join(src, "collections", name))
    monthly = os.path.join(src, "cmip", "parts")
    test_missing_partitions.write_partitions(monthly)
    r = subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(src, "cmip", "tas.nc"), monthly],
                       capture_output=True, text=True)
    check(r.returncode == 0, "ncafs aggregate failed: " + r.stderr)
    dataset(os.path.join(src, "counts64.nc"), "NETCDF3_64BIT_DATA",
            {"cnt64": ("i8", {"t": 4}), "tas": ("f4", {"t": 4, "x": 3}), "label": ("S1", {"t": 4, "len": 2})})
    with netCDF4.Dataset(os.path.join(src, "station.nc4"), "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.8"
        ds.createDimension("time", None)
        ds.createDimension("station", 5)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "hours since 2020-01-01", "standard"
        t[:] = np.arange(24)
        n = ds.createVariable("count", "i8", ("time", "station"), zlib=True)
        n.long_name = "events"
        n[:] = np.arange(120).reshape(24, 5)
        p = ds.createVariable("pr", "f4", ("time", "station"), zlib=True, fill_value=np.float32(-999))
        p.units, p.standard_name = "kg m-2 s-1", "precipitation_flux"
        p[:] = np.linspace(0, 1, 120, dtype="f4").reshape(24, 5)


def read_whole(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def case_quiet(work):
    src = os.path.join(work, "src")
    healthy_collection(src)
    for options in (None, "lods=1,lod_min_size=0"):
        with Mount(src, options) as m:
            ls = subprocess.run(["ls", "-lR", m.mnt], capture_output=True, text=True)
            check(ls.returncode == 0, "ls -lR exited %d: %s" % (ls.returncode, ls.stderr))
            check("counts64.vds" in os.listdir(m.mnt), "counts64.vds (tas) is not listed")
            for name in ("cmip/tas.nc", "realistic/real.nc", "station.nc", "station.ds", "counts64.vds"):
                read_whole(m.path(name))
            with netCDF4.Dataset(m.path("cmip/tas.nc")) as ds:
                check(ds["tas"].shape == (test_missing_partitions.MONTHS, test_missing_partitions.LAT,
                                          test_missing_partitions.LON), "cmip/tas.nc: shape %s" % (ds["tas"].shape,))
            lines = startup_lines(m.log_text())
            check(not lines, "a healthy mount (-o %s) logged during ls -lR and reads:\n%s" % (options, "\n".join(lines)))


def lod_names(names, stem):
    return sorted(n for n in names if n.startswith(stem + ".lod"))


def case_lods(work):
    src = os.path.join(work, "src")
    make_aggregations.monthly(src)  # monthly.nca: a small aggregation (time, lat, lon)
    dataset(os.path.join(src, "small.nc"), "NETCDF3_CLASSIC", {"t": ("f4", {"y": 6, "x": 5})})  # 120 bytes
    dataset(os.path.join(src, "line.nc"), "NETCDF3_CLASSIC", {"t": ("f4", {"x": 300000})})  # rank 1
    big = np.arange(300 * 1000, dtype="f4").reshape(300, 1000)  # 1.2 MB
    with netCDF4.Dataset(os.path.join(src, "big.nc"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("y", 300)
        ds.createDimension("x", 1000)
        ds.createVariable("t", "f4", ("y", "x"))[:] = big
    views = ["nc", "ds", "ncs", "vds", "zarr"]
    per_dataset = lambda stem, n: sorted("%s.lod%d.%s" % (stem, k, v) for k in range(1, n + 1) for v in views)
    with Mount(src, "lods=2,lod_min_size=1M") as m:
        names = os.listdir(m.mnt)
        check(lod_names(names, "monthly") == per_dataset("monthly", 2), "monthly: %s" % lod_names(names, "monthly"))
        check(lod_names(names, "big") == per_dataset("big", 2), "big: %s" % lod_names(names, "big"))
        check(lod_names(names, "small") == [] and lod_names(names, "line") == [],
              "LOD views of a small or rank-1 dataset: %s" % [n for n in names if ".lod" in n])
        # Every partition of the aggregation is small: none has LOD views.
        check(len([n for n in names if ".lod" in n]) == 20, "LOD names: %s" % sorted(n for n in names if ".lod" in n))
        for n in per_dataset("big", 2):
            os.stat(m.path(n))
        check_absent(m.path("small.lod1.nc"), "it is not listed")
        with netCDF4.Dataset(m.path("big.lod2.nc")) as ds:
            check(np.array_equal(ds["t"][:], big[::4, ::4]), "big.lod2.nc holds other values than every 4th sample")
    with Mount(src, "lods=1,lod_min_size=0") as m:
        names = os.listdir(m.mnt)
        check(lod_names(names, "small") == per_dataset("small", 1), "small, lod_min_size=0: %s"
              % lod_names(names, "small"))
        check(lod_names(names, "line") == [], "a rank-1 dataset has LOD views")


def case_cached(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    n = 300
    for i in range(n):
        dataset(os.path.join(src, "p%03d.nc" % i), "NETCDF3_CLASSIC", {"t": ("f4", {"y": 2, "x": 2})})
    make_aggregations.split_2d(src)
    with Mount(src, "cache_timeout=0") as m:
        first = sorted(os.listdir(m.mnt))
        check(len(first) == 5 * n + 5 + 6 * 5, "first listing: %d names" % len(first))
        with Traced(m.process.pid, os.path.join(work, "again.txt")) as again:
            for _ in range(3):
                check(sorted(os.listdir(m.mnt)) == first, "a second listing differs")
    opens = sum(again.counts.get(k, 0) for k in ("open", "openat", "openat2"))
    print("three listings of %d datasets again: %s" % (n, sorted(again.counts.items(), key=lambda kv: -kv[1])[:8]))
    # The folder itself and the root, per listing: nothing per file.
    check(opens <= 3 * 4, "listing again opened %d files (pre-check or views not cached)" % opens)
    check(again.counts.get("pread64", 0) <= 3, "listing again read files: %s" % again.counts)


CASES = {"served": case_served, "once": case_once, "quiet": case_quiet, "lods": case_lods, "cached": case_cached}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-listing-"))
