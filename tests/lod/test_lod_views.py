#!/usr/bin/python3
"""LOD views (-o lods=N) through real ncafs mounts.

NAME.lodN.nc must equal, variable by variable, xarray's
ds.isel({d: slice(None, None, 2**N)}) of the full view for every dimension
that is decimated (not the record dimension, not lod_keep=, not a char
variable's string length, not the bounds vertex dimension); ncdump -h must
show the shrunk dimensions. Cases: a single-file dataset (a netCDF file
written here with netCDF4-python), the NCA aggregation of tests/e2e/make_realistic.py (record
dimension time), lod_keep=, and a bytes case: reading a LOD2 view whole reads
far fewer bytes from the partitions (the daemon's rchar in /proc/PID/io,
nosplice) than reading the full view.
Usage: test_lod_views.py CASE; environment NCAFS_BIN; exit 77 = skipped.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np
import xarray as xr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import make_realistic  # noqa: E402  (the record-dimension NCA aggregation)
import test_mount  # noqa: E402  (Mount, fail, check, fuse_usable)

check, fail = test_mount.check, test_mount.fail


def write_grid(path):
    """Rank-2 and rank-3 variables with coordinates, a record dimension, a
    char variable, integer data with a fill value, odd and even lengths."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.title = "grid"
        ds.createDimension("t", None)
        ds.createDimension("y", 9)
        ds.createDimension("x", 12)
        ds.createDimension("strlen", 6)
        x = ds.createVariable("x", "f8", ("x",))
        x[:] = np.arange(12) * 0.5
        y = ds.createVariable("y", "f4", ("y",))
        y[:] = np.arange(9) * 10 - 40
        a = ds.createVariable("a", "f4", ("y", "x"))
        a[:] = np.arange(9 * 12).reshape(9, 12) * 1.5
        b = ds.createVariable("b", "i2", ("t", "y", "x"), fill_value=np.int16(-999))
        b.set_auto_maskandscale(False)
        raw = (np.arange(3 * 9 * 12).reshape(3, 9, 12) % 300).astype("i2")
        raw[1, 4, :] = -999
        b[:] = raw
        name = ds.createVariable("name", "S1", ("y", "strlen"))
        name[:] = netCDF4.stringtochar(np.array(["row%d" % i for i in range(9)], dtype="S6"))


def write_one_dimensional(path):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("n", 5)
        ds.createVariable("v", "i4", ("n",))[:] = np.arange(5)


def ncdump_dimensions(path):
    out = subprocess.run(["ncdump", "-h", path], check=True, capture_output=True, text=True).stdout
    block = out.split("dimensions:")[1].split("variables:")[0]
    return {m.group(1): int(m.group(3)) for m in re.finditer(r"(\w+) = (UNLIMITED ; // \()?(\d+)", block)}


def open_raw(path):
    return xr.open_dataset(path, decode_cf=False, mask_and_scale=False, decode_times=False, cache=False)


def compare_lod(full_path, lod_path, level, decimated):
    """Every variable of the LOD view equals the isel of the full view."""
    with open_raw(full_path) as full, open_raw(lod_path) as lod:
        want = full.isel({d: slice(None, None, 2 ** level) for d in decimated})
        check(set(lod.data_vars) | set(lod.coords) == set(want.data_vars) | set(want.coords),
              "%s: variables differ from %s" % (lod_path, full_path))
        for name in list(want.data_vars) + list(want.coords):
            got, exp = lod[name].values, want[name].values
            check(got.shape == exp.shape, "%s %s: shape %s, want %s" % (lod_path, name, got.shape, exp.shape))
            check(got.dtype == exp.dtype, "%s %s: dtype %s, want %s" % (lod_path, name, got.dtype, exp.dtype))
            check(np.array_equal(got, exp), "%s %s: values differ from the decimated full view" % (lod_path, name))
        check(int(lod.attrs["ncafs_lod_factor"]) == 2 ** level, "%s: ncafs_lod_factor" % lod_path)
        check(int(lod.attrs["ncafs_lod_level"]) == level, "%s: ncafs_lod_level" % lod_path)
        kept = sorted(set(full.dims) - set(decimated))
        check(sorted(lod.attrs["ncafs_lod_kept_dimensions"].split()) == kept,
              "%s: ncafs_lod_kept_dimensions %r, want %s" % (lod_path, lod.attrs["ncafs_lod_kept_dimensions"], kept))


def check_dimensions(full_path, lod_path, level, decimated):
    full, lod = ncdump_dimensions(full_path), ncdump_dimensions(lod_path)
    f = 2 ** level
    want = {d: (n + f - 1) // f if d in decimated else n for d, n in full.items()}
    check(lod == want, "ncdump -h %s: dimensions %s, want %s" % (lod_path, lod, want))


def case_single(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    write_grid(os.path.join(src, "grid.nc"))
    write_one_dimensional(os.path.join(src, "line.nc"))
    # lod_min_size=0: grid.nc is small (by default only datasets above 64M have LOD views).
    with test_mount.Mount(src, "lods=2,lod_min_size=0") as m:
        names = set(os.listdir(m.mnt))
        for n in (1, 2):
            for ext in ("nc", "ds", "ncs"):
                check("grid.lod%d.%s" % (n, ext) in names, "grid.lod%d.%s not listed: %s" % (n, ext, sorted(names)))
                check(os.path.getsize(m.path("grid.lod%d.%s" % (n, ext))) > 0, "grid.lod%d.%s empty" % (n, ext))
        check("grid.lod3.nc" not in names and not os.path.exists(m.path("grid.lod3.nc")), "lods=2 shows a lod3")
        check(not any(x.startswith("line.lod") for x in names) and not os.path.exists(m.path("line.lod1.nc")),
              "a dataset of rank-1 variables has LOD views")
        for n in (1, 2):
            # t: record; strlen: the string length of a char variable.
            compare_lod(m.path("grid.nc"), m.path("grid.lod%d.nc" % n), n, ["y", "x"])
            check_dimensions(m.path("grid.nc"), m.path("grid.lod%d.nc" % n), n, ["y", "x"])
        # The .ds twin of the LOD view holds the same dataset (read by the ds view's own JSON header).
        with open(m.path("grid.lod2.ds"), "rb") as f:
            header = f.read(4096)
        check(b"ncafs_lod_factor" in header, "grid.lod2.ds does not carry the LOD attributes")
    with test_mount.Mount(src) as m:
        check(not any(".lod" in x for x in os.listdir(m.mnt)), "LOD views without lods=")


def case_aggregation(work):
    src = os.path.join(work, "src")
    make_realistic.write(src)
    with test_mount.Mount(src, "lods=2,views=nc") as m:
        names = set(os.listdir(m.mnt))
        check({"real.lod1.nc", "real.lod2.nc"} <= names and "real.lod1.ds" not in names,
              "aggregation LOD names (views=nc): %s" % sorted(names))
        for n in (1, 2):
            # time: record dimension; nv: the vertex dimension of time_bnds.
            compare_lod(m.path("real.nc"), m.path("real.lod%d.nc" % n), n, ["lat", "lon"])
            check_dimensions(m.path("real.nc"), m.path("real.lod%d.nc" % n), n, ["lat", "lon"])


def case_keep(work):
    src = os.path.join(work, "src")
    make_realistic.write(src)
    write_grid(os.path.join(src, "grid.nc"))
    with test_mount.Mount(src, "lods=1,lod_keep=lat:x,lod_min_size=0") as m:
        compare_lod(m.path("real.nc"), m.path("real.lod1.nc"), 1, ["lon"])
        check_dimensions(m.path("real.nc"), m.path("real.lod1.nc"), 1, ["lon"])
        compare_lod(m.path("grid.nc"), m.path("grid.lod1.nc"), 1, ["y"])
        check_dimensions(m.path("grid.nc"), m.path("grid.lod1.nc"), 1, ["y"])


def write_big_aggregation(folder, parts=6, nt=4, ny=256, nx=256):
    """An NCA aggregation of `parts` record partitions of a float tas(time, y, x)."""
    import json
    os.makedirs(folder, exist_ok=True)
    entries = []
    for k in range(parts):
        with netCDF4.Dataset(os.path.join(folder, "big_%02d.nc" % k), "w", format="NETCDF3_64BIT_OFFSET") as ds:
            ds.createDimension("time", None)
            ds.createDimension("y", ny)
            ds.createDimension("x", nx)
            ds.createVariable("tas", "f4", ("time", "y", "x"))[:] = np.random.default_rng(k).random((nt, ny, nx))
        entries.append({"index": [k], "location": [[k * nt, k * nt + nt - 1], [0, ny - 1], [0, nx - 1]],
                        "subarray": {"file": "big_%02d.nc" % k, "ncvar": "tas", "shape": [nt, ny, nx]}})
    with netCDF4.Dataset(os.path.join(folder, "big.nca"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "NCA"
        ds.createDimension("time", None)
        ds.createDimension("y", ny)
        ds.createDimension("x", nx)
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(parts * nt)  # the record count
        v = ds.createVariable("tas", "f4", ())
        v.cf_role, v.nca_dimensions = "nca_variable", "time y x"
        v.nca_array = json.dumps({"pmdimensions": ["time"], "pmshape": [parts], "Partitions": entries})
    return parts * nt * ny * nx * 4


def daemon_rchar(mount):
    with open("/proc/%d/io" % mount.process.pid) as f:
        return int(re.search(r"rchar: (\d+)", f.read()).group(1))


def bytes_read_by_daemon(src, name, options):
    """Bytes a fresh mount's daemon read (rchar) during one whole read of `name`, and the bytes served."""
    with test_mount.Mount(src, options) as m:
        os.stat(m.path(name))  # the lookup opens the aggregation (headers): not part of the read
        before = daemon_rchar(m)
        for _ in range(100):  # the daemon's start-up reads (libraries, /proc) settle first
            time.sleep(0.2)
            before, previous = daemon_rchar(m), before
            if before == previous:
                break
        size = len(subprocess.run(["cat", m.path(name)], check=True, capture_output=True).stdout)
        return daemon_rchar(m) - before, size


def single_threaded_ncafs(work):
    """A wrapper that runs ncafs -s: concurrent readahead requests would
    compute the same view block twice, counting its reads twice."""
    wrapper = os.path.join(work, "ncafs-s")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nexec "%s" -s "$@"\n' % test_mount.NCAFS)
    os.chmod(wrapper, 0o755)
    return wrapper


def case_bytes(work):
    src = os.path.join(work, "src")
    test_mount.NCAFS = single_threaded_ncafs(work)
    data_bytes = write_big_aggregation(src)
    # Files changed within the last second are read twice (a write may be in
    # progress): the test-only switch closes that window, so the counts are one read's.
    os.environ["NCAFS_TEST_SETTLE_MS"] = "0"
    full, full_size = bytes_read_by_daemon(src, "big.nc", "lods=2,nosplice,views=nc")
    lod, lod_size = bytes_read_by_daemon(src, "big.lod2.nc", "lods=2,nosplice,views=nc")
    print("full view: %d bytes served, %d read by the daemon; LOD2: %d served, %d read (data %d)"
          % (full_size, full, lod_size, lod, data_bytes))
    check(full >= data_bytes, "the full view read %d bytes, less than its data (%d): rchar misses reads" % (full, data_bytes))
    check(lod_size * 15 < full_size, "LOD2 view of %d bytes is not about 1/16 of %d" % (lod_size, full_size))
    # Rows of y: 1/4; along x a span per row (the skipped samples share pages): at most ~1/4 of the data.
    check(lod < data_bytes / 3, "reading the LOD2 view read %d bytes from the partitions (data %d)" % (lod, data_bytes))


CASES = {"single": case_single, "aggregation": case_aggregation, "keep": case_keep, "bytes": case_bytes}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        fail("usage: test_lod_views.py %s" % "|".join(CASES))
    test_mount.require_fuse()
    work = tempfile.mkdtemp(prefix="ncafs-lod-")
    try:
        CASES[sys.argv[1]](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
