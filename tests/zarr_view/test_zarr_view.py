#!/usr/bin/python3
"""The `.zarr` folder view of every dataset, through real mounts.

Run as: test_zarr_view.py CASE   (CASE: read | chars | v3 | bounds | callers)
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

read: SOURCE holds a classic file (UNLIMITED time, CF attributes, fill
values, a char array) and its exports as .ds, .ncs, OpenVDS and a
reference set (and its LOD 1), a deflated chunked netCDF-4 file (zlib + shuffle,
UNLIMITED time, int64 with a fill value, char strings, CF time), a netCDF-4
file NCZarr can read, an NCA aggregation, a CF-1.13 aggregation written by
`ncafs aggregate` and an aggregation with a missing partition (mounted with
missing_partitions=fill). Every NAME.zarr is read by zarr-python
(open_consolidated and open) and xarray (open_zarr), each value, dtype,
attribute, fill value and decoded time compared with the `.nc` view read
by netCDF4-python and xarray; the listing of each store is complete (every
chunk key of the grid, nothing else); `cp -r` of each store to a local
folder reads the same; netcdf-c's NCZarr (ncdump) reads the netCDF-4 store
as ncdump reads its `.nc` view. (GDAL is not tried: gdal-bin is not among
packaging/install-deps.sh's packages.)

chars: datasets carrying char arrays (a classic file with station names,
a flag and time labels, with and without _FillValue, record, 1-D and 2-D;
a CF-1.13 aggregation by `ncafs aggregate` of classic partitions
carrying char variables): zarr-python and xarray read each store as the
`.nc` view; netcdf-c's NCZarr (ncdump) is first tried on a |S1 and a <U1
store written by zarr-python: when it reads the |S1 one right, it must read
the mount's stores as ncdump reads their `.nc` views; otherwise (netcdf-c
4.9.0: no valid char spelling reads, docs/zarr.md "Char arrays and
netcdf-c 4.9.0") it must fail on them as on zarr-python's |S1 store,
printing no data, and misread the valid <U1 store.

v3: the same sources mounted with zarr_format=3: every store lists exactly
the keys of its grid (VAR/zarr.json, VAR/c/i/j/k), each zarr.json gives
the .nc view's type, shape, dimension names and attributes, and a `cp -r`
copy of each store, mounted as a source, reads (through the mount's own v3
reader, which tests/zarr_store checks against zarrita) the values of the
original .nc view; zarrita (npm, installed as tests/zarr_store does;
SKIPPED loudly when it cannot be) reads four of the copies the same.

bounds: a classic file of 10^6 records gives an array of 10^6 chunks: a
stat of the store and of its .zarray, a listing of the store and a read of
.zmetadata answer within a liveness bound, and the daemon's peak memory
stays under 512 MiB, also after a listing of the 10^6 chunk names; hostile
names (out of the grid, leading zeros, wrong rank) are absent. A reference
set of 10^5 arrays gives a store of 10^5 arrays: stat, listing and
.zmetadata within a liveness bound, adding less than 256 MiB to the daemon's
peak over what the dataset and its .nc view take.

callers (root only, SKIPPED otherwise): with allow_other, a user who cannot
read one partition of an aggregation cannot open any file of its `.zarr`
view (EACCES, as for its `.nc` view), while the store of a readable
dataset reads.
"""
import json
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
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "reference_set"))
import make_aggregations  # noqa: E402
from test_mount import NCAFS, SKIP, Mount, check, run_cases  # noqa: E402
from test_reference_sets import daemon_peak_rss  # noqa: E402

LIVENESS_SECONDS = 30  # a stat that enumerated 10^6 chunks through FUSE would still pass: memory is the bound
# Parsing a dataset of 10^5 variables (and the .nc view's header of them) takes tens of seconds in the
# sanitizer build on a loaded machine: the store's first stat waits for it as the .nc view's does.
LIVENESS_SECONDS_MANY_ARRAYS = 300
PEAK_BYTES = 512 << 20
STORE_OF_MANY_ARRAYS_BYTES = 256 << 20  # 10^5 arrays: texts of about 40 MiB, .zmetadata 18 MB, its reads


def classic(path):
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.title = "classic source"
        ds.Conventions = "CF-1.8"
        ds.createDimension("time", None)
        ds.createDimension("lat", 3)
        ds.createDimension("lon", 4)
        ds.createDimension("nchar", 6)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01 00:00:00"
        t.calendar = "standard"
        t[:] = np.arange(5) * 1.5
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = [-10, 0, 10]
        tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=np.float32(-999))
        tas.units = "K"
        tas.standard_name = "air_temperature"
        tas.valid_range = np.array([0, 400], dtype="f4")
        values = np.arange(60, dtype="f4").reshape(5, 3, 4) + 250
        values[1, 1, 1] = -999
        tas[:] = values
        code = ds.createVariable("code", "i2", ("lat", "lon"))
        code.missing_value = np.int16(-1)
        code[:] = np.arange(12).reshape(3, 4) - 1
        name = ds.createVariable("station", "S1", ("lat", "nchar"))
        name[:] = netCDF4.stringtochar(np.array(["alpha", "b", "gamma!"], dtype="S6"))
        ds.createVariable("scalar", "f8", ())[...] = 3.25


def deflated_netcdf4(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "deflated netCDF-4"
        ds.history = "written by test_zarr_view.py"
        ds.createDimension("time", None)
        ds.createDimension("x", 6)
        ds.createDimension("len", 5)
        t = ds.createVariable("time", "i8", ("time",))
        t.units = "hours since 2001-02-03 04:00:00"
        t.calendar = "proleptic_gregorian"
        t[:] = np.arange(4) * 6
        q = ds.createVariable("q", "i8", ("time", "x"), zlib=True, shuffle=True, chunksizes=(2, 3),
                              fill_value=np.int64(-(2 ** 62)))
        q.long_name = "64-bit counts"
        q[0:3, :] = np.arange(18, dtype="i8").reshape(3, 6) * (2 ** 40) + 7  # the last record: fill
        w = ds.createVariable("w", "f8", ("time", "x"), zlib=True, shuffle=True, chunksizes=(1, 6),
                              fill_value=np.nan)
        w.units = "m s-1"
        w.scale_factor = 0.5
        w[:] = np.arange(24).reshape(4, 6) * 1.25
        u = ds.createVariable("u", "u2", ("x",), zlib=True, fill_value=np.uint16(65000))
        u[:4] = [1, 2, 60000, 4]
        s = ds.createVariable("label", "S1", ("x", "len"), zlib=True)
        s[:] = netCDF4.stringtochar(np.array(["ab", "cde", "f", "", "ghijk", "z"], dtype="S5"))


def nczarr_readable_netcdf4(path):
    """No char array and no fill in the data: what netcdf-c 4.9's NCZarr can read."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("y", 3)
        ds.createDimension("x", 4)
        ds.createVariable("f", "f4", ("y", "x"), zlib=True)[:] = np.arange(12).reshape(3, 4) / 4
        ds.createVariable("n", "i4", ("y", "x"))[:] = np.arange(12).reshape(3, 4) * 1000 - 5000
        ds.createVariable("big", "i8", ("x",))[:] = [2 ** 40, -3, 5, 2 ** 62]


def cf_aggregation(src):
    """Three monthly classic partitions and their CF-1.13 aggregation, written by ncafs aggregate."""
    parts = os.path.join(src, "cfparts")
    os.makedirs(parts)
    for i in range(3):
        with netCDF4.Dataset(os.path.join(parts, "p%d.nc" % i), "w", format="NETCDF3_CLASSIC") as ds:
            ds.Conventions = "CF-1.8"
            ds.createDimension("time", None)
            ds.createDimension("y", 4)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2010-01-01"
            t[:] = np.arange(2) + 2 * i
            v = ds.createVariable("pr", "f4", ("time", "y"), fill_value=np.float32(1e20))
            v.units = "kg m-2 s-1"
            v[:] = np.arange(8, dtype="f4").reshape(2, 4) + 10 * i
    r = subprocess.run([NCAFS, "aggregate", "-o", os.path.join(src, "cfagg.nc")] +
                       [os.path.join(parts, "p%d.nc" % i) for i in range(3)], capture_output=True, text=True)
    check(r.returncode == 0, "ncafs aggregate: %s" % r.stderr)


def exports_of(src, name):
    """The classic file exported as .ds, .ncs, OpenVDS and a reference set: sources of those formats."""
    stems = []
    for fmt, suffix in (("ds", "ds"), ("ncs", "ncs"), ("vds", "vds"), ("kerchunk", "json")):
        stem = "from_" + fmt
        r = subprocess.run([NCAFS, "export", os.path.join(src, name), "--format", fmt, "-o",
                            os.path.join(src, stem + "." + suffix)], capture_output=True, text=True)
        check(r.returncode == 0, "export --format %s: %s" % (fmt, r.stderr))
        stems.append((stem, ""))
    return stems


def make_source(src):
    os.makedirs(src)
    classic(os.path.join(src, "cls.nc"))
    sources = exports_of(src, "cls.nc")
    deflated_netcdf4(os.path.join(src, "deflated.nc4"))
    nczarr_readable_netcdf4(os.path.join(src, "nczarr_readable.nc4"))
    make_aggregations.monthly(os.path.join(src, "nca"))
    cf_aggregation(src)
    gap = os.path.join(src, "gap")
    make_aggregations.write_aggregation(gap, "gappy", ["time", "x"], {"time": 6, "x": 5},
                                        {"time": [2, 2, 2], "x": [5]})
    os.unlink(os.path.join(gap, "part_01_00.nc"))
    return sources + [("cls", ""), ("cls.lod1", ""), ("deflated", ""), ("nczarr_readable", ""), ("monthly", "nca"),
                      ("cfagg", ""), ("gappy", "gap")]


def same_attribute(got, want):
    if isinstance(want, str):
        return got == want
    want = np.atleast_1d(want)
    got = np.atleast_1d(np.asarray(got, dtype=want.dtype))
    return got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


def compare_attributes(got, want, what):
    got = {k: v for k, v in got.items() if k != "_ARRAY_DIMENSIONS"}
    want = {k: v for k, v in want.items() if k != "_FillValue"}
    check(sorted(got) == sorted(want), "%s: attributes %s, want %s" % (what, sorted(got), sorted(want)))
    for k, v in want.items():
        check(same_attribute(got[k], v), "%s: attribute %s is %r, want %r" % (what, k, got[k], v))


def compare_array(a, v, what):
    want = v[...]
    got = a[...]
    check(got.dtype.newbyteorder("=") == want.dtype.newbyteorder("="), "%s: dtype %s, want %s" % (what, got.dtype,
                                                                                                  want.dtype))
    check(got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind == "f"),
          "%s: values\n%s\nwant\n%s" % (what, got, want))
    check(a.attrs["_ARRAY_DIMENSIONS"] == list(v.dimensions), "%s: dimensions %s" % (what, a.attrs["_ARRAY_DIMENSIONS"]))
    compare_attributes(dict(a.attrs), {k: v.getncattr(k) for k in v.ncattrs()}, what)
    if "_FillValue" in v.ncattrs():
        check(same_attribute(a.fill_value, v.getncattr("_FillValue")), "%s: fill_value %r" % (what, a.fill_value))
    else:
        check(a.fill_value is None, "%s: fill_value %r without _FillValue" % (what, a.fill_value))


def compare_zarr(store, nc_path, what):
    """zarr-python reads the store (consolidated and not) as netCDF4-python reads the .nc view (raw values)."""
    with netCDF4.Dataset(nc_path) as nc:
        nc.set_auto_maskandscale(False)
        for how, group in (("consolidated", zarr.open_consolidated(store, mode="r")),
                           ("unconsolidated", zarr.open(store, mode="r"))):
            label = "%s (%s)" % (what, how)
            check(sorted(group.array_keys()) == sorted(nc.variables), "%s: arrays %s, want %s" %
                  (label, sorted(group.array_keys()), sorted(nc.variables)))
            compare_attributes(dict(group.attrs), {k: nc.getncattr(k) for k in nc.ncattrs()}, label + " global")
            for name, v in nc.variables.items():
                compare_array(group[name], v, "%s %s" % (label, name))


def same_decoded(got, want):
    """xarray's decoded values: NaN equals NaN (floats; and in objects, where masked chars decode to NaN)."""
    if want.dtype.kind == "O":
        nan = lambda x: isinstance(x, float) and x != x
        return got.shape == want.shape and all(a == b or (nan(a) and nan(b)) for a, b in zip(got.flat, want.flat))
    return np.array_equal(got, want, equal_nan=want.dtype.kind in "fc")


def compare_xarray(store, nc_path, what):
    """xarray's open_zarr decodes (fill values, CF scaling, times, strings) as its open_dataset of the .nc view."""
    with xr.open_zarr(store) as got, xr.open_dataset(nc_path) as want:
        check(sorted(got.variables) == sorted(want.variables), "%s: xarray variables differ" % what)
        for name in want.variables:
            g, w = got[name], want[name]
            check(g.dtype == w.dtype, "%s: xarray %s dtype %s, want %s" % (what, name, g.dtype, w.dtype))
            check(same_decoded(g.values, w.values), "%s: xarray %s values\n%s\nwant\n%s" % (what, name, g.values,
                                                                                             w.values))
            check(g.dims == w.dims, "%s: xarray %s dims %s" % (what, name, g.dims))
            for k in set(g.attrs) | set(w.attrs):
                check(k in g.attrs and k in w.attrs and same_attribute(g.attrs[k], w.attrs[k]),
                      "%s: xarray %s attribute %s" % (what, name, k))
        check(got.attrs.keys() == want.attrs.keys(), "%s: xarray global attributes differ" % what)


def expected_keys(store):
    """Every file a store holds, from its own metadata: the chunk keys of each grid."""
    meta = json.load(open(os.path.join(store, ".zmetadata")))["metadata"]
    keys = {".zgroup", ".zattrs", ".zmetadata"}
    for key, value in meta.items():
        if not key.endswith("/.zarray"):
            continue
        name = key[:-len("/.zarray")]
        keys |= {name + "/.zarray", name + "/.zattrs"}
        per_dim = [-(-s // c) for s, c in zip(value["shape"], value["chunks"])]
        if not per_dim:
            keys.add(name + "/0")
        for index in np.ndindex(*per_dim) if per_dim else []:
            keys.add(name + "/" + ".".join(str(i) for i in index))
    return keys


def listed_keys(store):
    found = set()
    for folder, _, files in os.walk(store):
        rel = os.path.relpath(folder, store)
        found |= {f if rel == "." else rel + "/" + f for f in files}
    return found


def ncdump_data(path):
    r = subprocess.run(["ncdump", path], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "ncdump %s: exit %d: %s" % (path, r.returncode, r.stderr))
    return r.stdout[r.stdout.index("data:"):]


def classic_without_char(path):
    """A classic file NCZarr can read the default store of (no char array): an UNLIMITED time, CF attributes."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 5)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = np.arange(4) * 0.25
        tas = ds.createVariable("tas", "f4", ("time", "x"), fill_value=np.float32(-999))
        tas.units = "K"
        tas[:] = np.arange(20).reshape(4, 5) + 270.5
        ds.createVariable("n", "i4", ("x",))[:] = [-7, 0, 3, 2 ** 30, -(2 ** 31)]


def check_nczarr(store, nc_path):
    """netcdf-c's NCZarr reads a little-endian store (the default) as ncdump reads the .nc view."""
    url = "file://%s#mode=zarr,file" % os.path.abspath(store)
    got, want = ncdump_data(url), ncdump_data(nc_path)
    # NCZarr orders variables by name, the .nc view as the file: compare each variable's block.
    blocks = lambda text: sorted(b.strip() for b in re.split(r"\n\s*\n", text.replace("data:", "").rstrip("}\n")) if b.strip())
    check(blocks(got) == blocks(want), "NCZarr read %s otherwise than ncdump reads %s:\n%s\n---\n%s" %
          (store, nc_path, got, want))
    print("NCZarr (ncdump %s) reads the same values as the .nc view" % url)
    print("NOTE: NCZarr is not compared here on stores with char arrays (the chars case) or on zarr_chunks=stored "
          "ones (netcdf-c 4.9.0 reads big-endian chunks unswapped)")


def case_read(work):
    src = os.path.join(work, "src")
    datasets = make_source(src)
    classic_without_char(os.path.join(src, "nochar.nc"))
    with Mount(src, "missing_partitions=fill,lods=1,lod_min_size=0") as m:
        for stem, folder in datasets:
            store, nc_path = m.path(folder, stem + ".zarr"), m.path(folder, stem + ".nc")
            check(os.path.isdir(store), "%s is not a folder: %s" % (store, os.listdir(m.path(folder))))
            compare_zarr(store, nc_path, stem)
            compare_xarray(store, nc_path, stem)
            want = expected_keys(store)
            check(listed_keys(store) == want, "%s: the listing differs from the grid's keys: %s" %
                  (stem, sorted(listed_keys(store) ^ want)[:20]))
            copy = os.path.join(work, "copies", stem + ".zarr")
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            r = subprocess.run(["cp", "-r", store, copy], capture_output=True, text=True)
            check(r.returncode == 0, "cp -r %s: %s" % (store, r.stderr))
            compare_zarr(copy, nc_path, stem + " (cp -r copy)")
            print("%s.zarr: %d files, read as its .nc view, copied whole" % (stem, len(want)))
        check_nczarr(m.path("nczarr_readable.zarr"), m.path("nczarr_readable.nc"))
        check_nczarr(m.path("nochar.zarr"), m.path("nochar.nc"))  # a classic file: computed by default
        check(m.alive(), "the daemon died")


def classic_with_chars(path):
    """Char arrays as classic files carry them: station names (2-D, no _FillValue), a 1-D flag
    with a _FillValue and a place left unwritten, time labels along UNLIMITED time with a _FillValue (the
    last record unwritten), a 1-D char without _FillValue holding a NUL; and numbers. No scalar: netcdf-c
    4.9.0's NCZarr crashes reading any scalar array (docs/zarr.md), which would hide what chars do."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.8"
        for dim, size in (("time", None), ("station", 3), ("name_len", 8), ("label_len", 4), ("code_len", 5)):
            ds.createDimension(dim, size)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = np.arange(4) + 0.5
        name = ds.createVariable("station_name", "S1", ("station", "name_len"))
        name.cf_role = "timeseries_id"
        name[:] = netCDF4.stringtochar(np.array([b"Oslo", b"Bergen", b"Alta-7!"], dtype="S8"))
        flag = ds.createVariable("qc_flag", "S1", ("station",), fill_value=b"x")
        flag[0], flag[2] = b"g", b"b"  # station 1 keeps the fill
        label = ds.createVariable("time_label", "S1", ("time", "label_len"), fill_value=b"?")
        label[0:3] = netCDF4.stringtochar(np.array([b"jan", b"feb", b"mar"], dtype="S4"))
        ds.createVariable("code", "S1", ("code_len",))[:] = np.array(list(b"ab\0de"), dtype="u1").view("S1")
        ds.createVariable("pr", "f4", ("time", "station"))[:] = np.arange(12, dtype="f4").reshape(4, 3) / 8


def char_aggregation(src):
    """Two classic partitions carrying char variables (labels along time, station names beside it) and their
    CF-1.13 aggregation by ncafs aggregate."""
    parts = os.path.join(src, "charparts")
    os.makedirs(parts)
    for i in range(2):
        with netCDF4.Dataset(os.path.join(parts, "p%d.nc" % i), "w", format="NETCDF3_CLASSIC") as ds:
            for dim, size in (("time", None), ("station", 2), ("name_len", 6), ("label_len", 3)):
                ds.createDimension(dim, size)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2010-01-01"
            t[:] = np.arange(2) + 2 * i
            ds.createVariable("station_name", "S1", ("station", "name_len"))[:] = netCDF4.stringtochar(
                np.array([b"north", b"south"], dtype="S6"))
            label = ds.createVariable("time_label", "S1", ("time", "label_len"), fill_value=b"-")
            label[0] = netCDF4.stringtochar(np.array([b"d%d" % (2 * i)], dtype="S3"))[0]  # record 1: fill
            ds.createVariable("pr", "f4", ("time", "station"))[:] = np.arange(4, dtype="f4").reshape(2, 2) + 10 * i
    r = subprocess.run([NCAFS, "aggregate", "-o", os.path.join(src, "charagg.nc")] +
                       [os.path.join(parts, "p%d.nc" % i) for i in range(2)], capture_output=True, text=True)
    check(r.returncode == 0, "ncafs aggregate: %s" % r.stderr)


def nczarr_on_probe(folder, dtype):
    """ncdump (NCZarr) on a store zarr-python writes: one uncompressed char array of this dtype holding
    "ab", "c". Returns (exit status, the data section or stderr)."""
    store = os.path.join(folder, "probe_%s.zarr" % dtype.strip("<>|"))
    group = zarr.open_group(store, mode="w")
    a = group.create("s", shape=(2, 2), chunks=(2, 2), dtype=dtype, compressor=None, fill_value=None)
    a[...] = np.array([[b"a", b"b"], [b"c", b""]]).astype(dtype)
    a.attrs["_ARRAY_DIMENSIONS"] = ["n", "len"]
    r = subprocess.run(["ncdump", "file://%s#mode=zarr,file" % store], capture_output=True, text=True, timeout=120)
    out = r.stdout[r.stdout.index("data:"):] if r.returncode == 0 and "data:" in r.stdout else r.stderr
    return r.returncode, " ".join(out.split())


def check_nczarr_chars(stores, work):
    """NCZarr on the stores of datasets with char arrays: the .nc view's values when the installed
    netcdf-c reads a |S1 array zarr-python writes; else (netcdf-c 4.9.0, docs/zarr.md "Char arrays and
    netcdf-c 4.9.0") the store fails as zarr-python's does, and no valid spelling would do: the only
    dtype 4.9.0 reads as char, U1, is 4 bytes an element, which it reads as one (wrong values)."""
    probes = os.path.join(work, "probes")
    os.makedirs(probes)
    s1_status, s1_out = nczarr_on_probe(probes, "|S1")
    if s1_status == 0:
        check('"ab", "c"' in s1_out, "NCZarr reads zarr-python's |S1 store as %s" % s1_out)
        for store, nc_path in stores:
            check_nczarr(store, nc_path)
        return
    u1_status, u1_out = nczarr_on_probe(probes, "<U1")
    check(u1_status == 0 and '"ab", "c"' not in u1_out,
          "NCZarr read zarr-python's <U1 store as %r (exit %d): a U1 spelling may now read right" % (u1_out, u1_status))
    for store, nc_path in stores:
        url = "file://%s#mode=zarr,file" % os.path.abspath(store)
        r = subprocess.run(["ncdump", url], capture_output=True, text=True, timeout=120)
        check(r.returncode == s1_status and "data:" not in r.stdout,
              "NCZarr on %s: exit %d (zarr-python's |S1 store: %d), output %r" %
              (store, r.returncode, s1_status, r.stdout[-300:]))
        ncdump_data(nc_path)  # the .nc view itself dumps
    print("NOTE: this netcdf-c's NCZarr cannot read char arrays: exit %d on zarr-python's |S1 store, as on %d "
          "stores of the mount; a valid <U1 (4 bytes a char) reads as %r, not \"ab\", \"c\"" %
          (s1_status, len(stores), u1_out[-60:]))


def case_chars(work):
    """Datasets carrying char arrays (a classic file, a CF-1.13 aggregation of classic partitions): their
    stores read by zarr-python and xarray as the .nc view, and by NCZarr as check_nczarr_chars says."""
    src = os.path.join(work, "src")
    os.makedirs(src)
    classic_with_chars(os.path.join(src, "chars.nc"))
    char_aggregation(src)
    with Mount(src) as m:
        stores = [(m.path(stem + ".zarr"), m.path(stem + ".nc")) for stem in ("chars", "charagg")]
        for store, nc_path in stores:
            with netCDF4.Dataset(nc_path) as nc:
                chars = sorted(n for n, v in nc.variables.items() if v.dtype == np.dtype("S1"))
            check(len(chars) >= 2, "%s: char variables %s" % (nc_path, chars))
            compare_zarr(store, nc_path, os.path.basename(store))
            compare_xarray(store, nc_path, os.path.basename(store))
            print("%s: char arrays %s read by zarr-python and xarray as the .nc view" % (store, chars))
        check_nczarr_chars(stores, work)
        check(m.alive(), "the daemon died")


def timed(what, call, bound=LIVENESS_SECONDS):
    start = time.monotonic()
    result = call()
    took = time.monotonic() - start
    check(took < bound, "%s took %.1f s" % (what, took))
    print("%s: %.3f s" % (what, took))
    return result


def many_arrays(path, n):
    """A reference set of n arrays of 4 floats, none with a chunk (all fill)."""
    zarray = json.dumps({"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f4", "fill_value": 1.5,
                         "order": "C", "compressor": None, "filters": None})
    refs = {".zgroup": json.dumps({"zarr_format": 2}), ".zattrs": json.dumps({"title": "many arrays"})}
    for i in range(n):
        refs["a%d/.zarray" % i] = zarray
        refs["a%d/.zattrs" % i] = '{"_ARRAY_DIMENSIONS": ["x"]}'
    with open(path, "w") as f:
        json.dump({"version": 1, "refs": refs}, f)


def check_many_arrays(m, n):
    store = m.path("arrays.zarr")
    timed("stat of arrays.nc (%d variables: the dataset parsed)" % n, lambda: os.stat(m.path("arrays.nc")),
          LIVENESS_SECONDS_MANY_ARRAYS)
    nc_peak = daemon_peak_rss(m)
    print("daemon peak after the .nc view of %d variables: %.1f MiB" % (n, nc_peak / 2 ** 20))
    timed("stat of arrays.zarr (its layout made)", lambda: os.stat(store), LIVENESS_SECONDS_MANY_ARRAYS)
    print("daemon peak after the store's layout: %.1f MiB" % (daemon_peak_rss(m) / 2 ** 20))
    count = timed("listing of arrays.zarr", lambda: len(os.listdir(store)))
    check(count == n + 3, "%d names in arrays.zarr" % count)
    meta = timed("read of .zmetadata", lambda: json.load(open(os.path.join(store, ".zmetadata"))))
    check(len(meta["metadata"]) == 2 * n + 2, "%d keys in .zmetadata" % len(meta["metadata"]))
    print("daemon peak after .zmetadata: %.1f MiB" % (daemon_peak_rss(m) / 2 ** 20))
    group = zarr.open_consolidated(store, mode="r")
    check(group["a%d" % (n - 1)][...].tolist() == [1.5] * 4, "the last array's values")
    # The dataset and its .nc view of 10^5 variables cost what the reference reader and the .nc
    # view cost (their own bounds); the store may add its metadata texts, not more than this.
    added = daemon_peak_rss(m) - nc_peak
    print("the store of %d arrays added %.1f MiB to the daemon's peak" % (n, added / 2 ** 20))
    check(added < STORE_OF_MANY_ARRAYS_BYTES, "the store of %d arrays added %d bytes" % (n, added))


def case_bounds(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    arrays = 10 ** 5
    many_arrays(os.path.join(src, "arrays.json"), arrays)
    records = 10 ** 6
    with netCDF4.Dataset(os.path.join(src, "many.nc"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", None)
        ds.createVariable("v", "i1", ("time",))[:] = (np.arange(records) % 100).astype("i1")
    # The reference reader counts 4 KiB of metadata an array: 10^5 arrays need more than its default 256 MiB.
    with Mount(src, "max_file_metadata_mem=1G,max_metadata_mem=2G") as m:
        store = m.path("many.zarr")
        timed("stat of many.zarr", lambda: os.stat(store))
        timed("stat of many.zarr/v/.zarray", lambda: os.stat(os.path.join(store, "v", ".zarray")))
        names = timed("listing of many.zarr", lambda: sorted(os.listdir(store)))
        check(names == [".zattrs", ".zgroup", ".zmetadata", "v"], "store listing: %s" % names)
        meta = timed("read of .zmetadata", lambda: json.load(open(os.path.join(store, ".zmetadata"))))
        check(meta["metadata"]["v/.zarray"]["chunks"] == [1], "chunks: %s" % meta["metadata"]["v/.zarray"])
        before = daemon_peak_rss(m)
        print("daemon peak before listing the chunks: %.1f MiB" % (before / 2 ** 20))
        check(before < PEAK_BYTES, "peak memory %d bytes after stats of a store of 10^6 chunks" % before)
        last = os.path.join(store, "v", str(records - 1))
        check(os.stat(last).st_size == 1, "the last chunk's size")
        with open(last, "rb") as f:
            check(f.read() == bytes([(records - 1) % 100]), "the last chunk's value")
        for bad in (str(records), "01", "0.0", "-1", " 1", "1 ", "1e3", ".zarray/..", "0x10", "0.", ".0"):
            check(not os.path.exists(os.path.join(store, "v", bad)), "v/%r exists" % bad)
        check(not os.path.exists(os.path.join(store, "nothing", ".zarray")), "an array that is not there")
        count = timed("listing of 10^6 chunk names", lambda: sum(1 for _ in os.scandir(os.path.join(store, "v"))))
        check(count == records + 2, "%d names in v/" % count)
        after = daemon_peak_rss(m)
        print("daemon peak after listing 10^6 chunk names: %.1f MiB" % (after / 2 ** 20))
        check(after < PEAK_BYTES, "peak memory %d bytes after listing 10^6 chunks" % after)
        check(zarr.open_consolidated(store, mode="r")["v"][999990:].tolist() == [i % 100 for i in range(999990, records)],
              "zarr reads the last chunks")
        check_many_arrays(m, arrays)


V3_TYPES = {"i1": "int8", "S1": "uint8", "i2": "int16", "i4": "int32", "f4": "float32", "f8": "float64",
            "u1": "uint8", "u2": "uint16", "u4": "uint32", "i8": "int64", "u8": "uint64"}


def expected_v3_keys(store):
    """Every file of a v3 store, from its zarr.json documents: chunks VAR/c/i/j/k."""
    keys = {"zarr.json"}
    for name in os.listdir(store):
        if name == "zarr.json":
            continue
        node = json.load(open(os.path.join(store, name, "zarr.json")))
        keys.add(name + "/zarr.json")
        chunk = node["chunk_grid"]["configuration"]["chunk_shape"]
        per_dim = [-(-s // c) for s, c in zip(node["shape"], chunk)]
        if not per_dim:
            keys.add(name + "/c")
        for index in np.ndindex(*per_dim) if per_dim else []:
            keys.add(name + "/c/" + "/".join(str(i) for i in index))
    return keys


def check_v3_nodes(store, nc_path, what):
    """Each array's zarr.json says what the .nc view holds: type, shape, dimension names, attributes."""
    with netCDF4.Dataset(nc_path) as nc:
        group = json.load(open(os.path.join(store, "zarr.json")))
        check(group["node_type"] == "group" and group["zarr_format"] == 3, "%s: root zarr.json %s" % (what, group))
        compare_attributes(group["attributes"], {k: nc.getncattr(k) for k in nc.ncattrs()}, what + " v3 global")
        for name, v in nc.variables.items():
            node = json.load(open(os.path.join(store, name, "zarr.json")))
            check(node["data_type"] == V3_TYPES[v.dtype.str[1:]] and node["shape"] == list(v.shape) and
                  node["dimension_names"] == list(v.dimensions), "%s %s: zarr.json %s" % (what, name, node))
            compare_attributes(node["attributes"], {k: v.getncattr(k) for k in v.ncattrs()}, "%s %s v3" % (what, name))


def check_zarrita(stores, want_of):
    """zarrita (npm, as tests/zarr_store installs it) reads each v3 store as the .nc view."""
    sys.path.insert(0, os.path.join(HERE, "..", "zarr_store"))
    from test_zarr_stores import install_zarrita, node  # noqa: E402
    prefix, why = install_zarrita()
    if prefix is None:
        print("SKIPPED (zarrita sub-check only): " + why)
        return
    shutil.copy(os.path.join(HERE, "..", "zarr_store", "read_v3.mjs"), os.path.join(prefix, "read_v3.mjs"))
    for store in stores:
        # read_v3.mjs reads arrays of rank 1 and more (zarrita gives a 0-d array's value alone).
        want = {name: values for name, values in want_of(store).items() if values.ndim > 0}
        got = json.loads(node(prefix, "read_v3.mjs", store, *want))
        for name, values in want.items():
            flat = [None if isinstance(x, float) and x != x else x for x in values.ravel().tolist()]
            read = [int(x) if isinstance(x, str) else x for x in got[name]]
            check(read == flat, "zarrita %s %s: %s, want %s" % (store, name, read[:20], flat[:20]))
        print("zarrita reads %s as its .nc view" % store)


def raw_values(nc_path):
    with netCDF4.Dataset(nc_path) as nc:
        nc.set_auto_maskandscale(False)
        out = {}
        for name, v in nc.variables.items():
            w = v[...]
            out[name] = w.view("u1") if w.dtype.kind == "S" else w
        return out


def case_v3(work):
    """zarr_format=3: v3 stores, read back by the mount's own v3 reader (aggregation/zarr_store,
    tested against zarrita) from a copy: the same values as the .nc view."""
    src, again = os.path.join(work, "src"), os.path.join(work, "again")
    os.makedirs(again)
    datasets = [d for d in make_source(src) if d[0] not in ("cls.lod1",)]
    with Mount(src, "missing_partitions=fill,zarr_format=3") as m:
        for stem, folder in datasets:
            store = m.path(folder, stem + ".zarr")
            keys = expected_v3_keys(store)
            check(listed_keys(store) == keys, "%s: the v3 listing differs from the grid's keys: %s" %
                  (stem, sorted(listed_keys(store) ^ keys)[:20]))
            check_v3_nodes(store, m.path(folder, stem + ".nc"), stem)
            r = subprocess.run(["cp", "-r", store, os.path.join(again, stem + ".zarr")], capture_output=True, text=True)
            check(r.returncode == 0, "cp -r %s: %s" % (store, r.stderr))
        nc_of = {os.path.join(again, stem + ".zarr"): m.path(folder, stem + ".nc") for stem, folder in datasets}
        with Mount(again) as copies:
            for stem, folder in datasets:
                want, got = raw_values(m.path(folder, stem + ".nc")), raw_values(copies.path(stem + ".nc"))
                check(sorted(got) == sorted(want), "%s: v3 copy variables" % stem)
                for name, w in want.items():
                    check(np.array_equal(got[name], w, equal_nan=w.dtype.kind == "f"),
                          "%s %s: v3 copy read %s, want %s" % (stem, name, got[name], w))
                print("%s.zarr (v3): read back from a copy as its .nc view" % stem)
        check_zarrita([os.path.join(again, s + ".zarr") for s in ("cls", "deflated", "monthly", "gappy")],
                      lambda store: raw_values(nc_of[store]))


USER = "ncafs-h-zarrview"


def as_user(path):
    code = "import sys\ntry:\n    open(sys.argv[1], 'rb').read(); print('ok')\nexcept OSError as e:\n    print(e.errno)\n"
    r = subprocess.run(["runuser", "-u", USER, "--", "/usr/bin/python3", "-c", code, path], capture_output=True,
                       text=True, cwd="/", timeout=120)
    check(r.returncode == 0, "reader as %s failed: %s" % (USER, r.stderr))
    return r.stdout.strip()


def case_callers(work):
    if os.geteuid() != 0:
        print("SKIPPED: the callers case must run as root (it creates a user and mounts with allow_other)")
        sys.exit(SKIP)
    subprocess.run(["userdel", USER], capture_output=True)
    r = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                       capture_output=True, text=True)
    check(r.returncode == 0, "useradd: %s" % r.stderr)
    os.chmod(work, 0o755)  # the user reaches the mount through it
    try:
        src = os.path.join(work, "src")
        make_aggregations.write_aggregation(src, "agg", ["time", "x"], {"time": 4, "x": 3}, {"time": [2, 2], "x": [3]})
        classic(os.path.join(src, "open.nc"))
        os.chmod(os.path.join(src, "part_01_00.nc"), 0o600)  # root's alone
        with Mount(src, "allow_other") as m:
            for member in ("agg.zarr/tas/0.0", "agg.zarr/.zmetadata", "agg.zarr/tas/.zarray",
                           "agg.nc"):
                check(as_user(m.path(member)) == "13", "%s: the user read it (or got another error)" % member)
            for member in ("open.zarr/tas/0.0.0", "open.zarr/.zmetadata"):
                check(as_user(m.path(member)) == "ok", "%s: the user cannot read it" % member)
            with open(m.path("agg.zarr", "tas", "0.0"), "rb") as f:  # root reads the hidden partition
                check(len(f.read()) == 4 * 3 * 4, "root's read of a chunk")
            print("a user who cannot read a partition opens no file of its .zarr view (EACCES)")
    finally:
        subprocess.run(["userdel", USER], capture_output=True)


CASES = {"read": case_read, "chars": case_chars, "v3": case_v3, "bounds": case_bounds, "callers": case_callers}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-zarr-view-"))
