#!/usr/bin/python3
"""GDAL's Zarr driver (gdal-bin, GDAL 3.6) reads the `.zarr` views of a
mount as netCDF4-python reads their `.nc` views.

Run as: test_zarr_view_gdal.py gdal
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

The sources of reader_sources.py (a classic file, a deflated netCDF-4 file,
an int64 NCA aggregation with a missing partition, mounted with
missing_partitions=fill). For each NAME.zarr:
  - `gdalmdiminfo -detailed` (GDAL's multidimensional API, JSON with every
    value): the same arrays, dimensions, GDAL data types, fill values
    (nodata_value) and raw values as the `.nc` view;
  - `gdal_translate ZARR:"NAME.zarr":/VAR[:I]` (GDAL's raster API: each 2-D
    array, and each 2-D slice I of a 3-D one) to a netCDF-4 file (the
    raster's rows top down), whose Band1 is the slice of the `.nc` view;
  - `gdalmdimtranslate NAME.zarr OUT.nc` (the whole store to netCDF-4):
    every variable of OUT.nc holds the `.nc` view's values (char arrays as
    GDAL's one-character strings).
The comparisons are of values, not of chunk shapes or compressors.
SKIPPED (exit 77) when gdal-bin is not installed.
"""
import json
import os
import shutil
import subprocess
import sys

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from test_mount import SKIP, Mount, check, run_cases  # noqa: E402
from reader_sources import MOUNT_OPTIONS, make_sources, raw_variables  # noqa: E402

GDAL_TYPES = {"u1": "Byte", "i2": "Int16", "u2": "UInt16", "i4": "Int32", "u4": "UInt32", "i8": "Int64",
              "u8": "UInt64", "f4": "Float32", "f8": "Float64", "S1": "String"}


def gdal(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr[-2000:]))
    return r.stdout


def as_array(values, want):
    """GDAL's JSON values as an array of the `.nc` view's type: "NaN" and the
    infinities are texts; a char is a one-character text ("" for NUL)."""
    if want.dtype.kind == "S":
        return np.array(values, dtype="S1")
    if want.dtype.kind == "f":
        fix = lambda x: [fix(y) for y in x] if isinstance(x, list) else float(x)
        return np.array(fix(values), dtype=want.dtype)
    return np.array(values, dtype=want.dtype)


def same(got, want):
    return got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


def check_mdiminfo(store, variables, what):
    info = json.loads(gdal("gdalmdiminfo", "-detailed", store))
    arrays = info.get("arrays", {})
    check(sorted(arrays) == sorted(variables), "%s: GDAL arrays %s, want %s" % (what, sorted(arrays),
                                                                              sorted(variables)))
    for name, (want, dims, fill) in variables.items():
        a, label = arrays[name], "%s %s (gdalmdiminfo)" % (what, name)
        check(a["datatype"] == GDAL_TYPES[want.dtype.str[1:]], "%s: datatype %s, want %s" % (label, a["datatype"],
                                                                                          want.dtype))
        check(a.get("dimensions", []) == ["/" + d for d in dims], "%s: dimensions %s" % (label, a.get("dimensions")))
        got = as_array(a["values"], want)
        check(same(got, want), "%s: values\n%s\nwant\n%s" % (label, got, want))
        if fill is not None:
            nodata = as_array(a.get("nodata_value"), want)
            check(same(nodata, np.array(fill, dtype=want.dtype)), "%s: nodata_value %s, want _FillValue %s" %
                  (label, a.get("nodata_value"), fill))
    print("%s: gdalmdiminfo -detailed gives the .nc view's arrays, types, fill values and values" % what)


def raster_slices(store, variables):
    """(GDAL's raster name, the .nc view's 2-D values) of every numeric array of rank 2, and of
    every slice along the first dimension of rank 3."""
    for name, (want, _, _) in variables.items():
        if want.dtype.kind == "S" or want.ndim not in (2, 3):
            continue
        if want.ndim == 2:
            yield 'ZARR:"%s":/%s' % (store, name), want
        for i in range(want.shape[0]) if want.ndim == 3 else []:
            yield 'ZARR:"%s":/%s:%d' % (store, name, i), want[i]


def read_netcdf(path, name):
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        return nc[name][...]


def check_translate(store, variables, work, what):
    out = os.path.join(work, "slice.nc")
    count = 0
    for raster, want in raster_slices(store, variables):
        gdal("gdal_translate", "-q", "-of", "netCDF", "-co", "FORMAT=NC4", "-co", "WRITE_BOTTOMUP=NO", raster, out)
        got = read_netcdf(out, "Band1")
        check(got.dtype == want.dtype and same(got, want), "%s: gdal_translate %s gave\n%s\nwant\n%s" %
              (what, raster, got, want))
        os.unlink(out)
        count += 1
    check(count > 0, "%s: no raster to translate" % what)
    print("%s: gdal_translate of %d 2-D arrays and slices gives the .nc view's values" % (what, count))


def gdal_strings(values):
    """GDAL writes char arrays as netCDF strings of one character; an absent one is a NUL."""
    return np.array([(s or "").encode() for s in np.ravel(values)], dtype="S1").reshape(np.shape(values))


def check_mdimtranslate(store, variables, work, what):
    out = os.path.join(work, "whole.nc")
    gdal("gdalmdimtranslate", "-co", "FORMAT=NC4", store, out)
    for name, (want, _, _) in variables.items():
        got = read_netcdf(out, name)
        if want.dtype.kind == "S":
            got = gdal_strings(got)
        check(got.dtype == want.dtype and same(got, want), "%s %s: gdalmdimtranslate wrote\n%s\nwant\n%s" %
              (what, name, got, want))
    os.unlink(out)
    print("%s: gdalmdimtranslate to netCDF-4 writes the .nc view's values" % what)


def case_gdal(work):
    if not (shutil.which("gdalmdiminfo") and shutil.which("gdal_translate") and shutil.which("gdalmdimtranslate")):
        print("SKIPPED: GDAL's programs are not installed (Debian package gdal-bin)")
        sys.exit(SKIP)
    print(gdal("gdalinfo", "--version").strip())
    src = os.path.join(work, "src")
    datasets = make_sources(src)
    with Mount(src, MOUNT_OPTIONS) as m:
        for stem, folder in datasets:
            store = m.path(folder, stem + ".zarr")
            variables = raw_variables(m.path(folder, stem + ".nc"))
            check_mdiminfo(store, variables, stem)
            check_translate(store, variables, work, stem)
            check_mdimtranslate(store, variables, work, stem)
        check(m.alive(), "the daemon died")


if __name__ == "__main__":
    sys.exit(run_cases({"gdal": case_gdal}, "ncafs-zarr-gdal-"))
