#!/usr/bin/python3
"""The `.zarr` view hands out the deflated chunks of netCDF-4 files as they are stored.

Run as: test_zarr_passthrough.py CASE   (CASE: read | v3 | hostile | oracle | fragments)
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

read: a netCDF-4 file with an UNLIMITED time, CF attributes, variables
deflated with and without shuffle (float32, float64, int64, a big-endian
float32), one partly written (chunks HDF5 never allocated), one partly
written without a _FillValue, one with fletcher32. Each passed-through
array's .zarray names the file's chunk grid, compressor zlib, filter
shuffle (elementsize) when shuffled and the file's byte order; every chunk
file's bytes equal h5py's read_direct_chunk of the same chunk, chunks HDF5
never allocated are absent (lookup and listing); the other variables are
computed as before (compressor null, every chunk listed). zarr-python
(open_consolidated) reads every array as netCDF4-python reads the `.nc`
view and the original file; xarray's open_zarr decodes as its
open_dataset of the `.nc` view. Without zarr_chunks=stored (the default,
computed) every array is computed (no compressor) and reads the same.

v3: the same file with zarr_format=3: codecs bytes, numcodecs.shuffle,
numcodecs.zlib; chunk files c/i/j/k equal to h5py's; never-allocated
chunks absent; zarrita (npm, as tests/zarr_store installs it) and the
mount's own v3 reader (a `cp -r` copy mounted) read the `.nc` view's values.

hostile: copies of a netCDF-4 file whose chunk index (a v1 B-tree, patched
in place) claims a chunk far larger than the file, one inside the file but
larger than deflate can make a chunk of its shape, or two chunks at one
place: the array falls back to computed chunks with one log line naming
the file and the reason; reading an oversized chunk fails with EIO; the
daemon lives.

fragments: a CF-1.13 aggregation whose fragments are declared constant
(7, and the fill value) or missing, in rows of 40 MB (one chunk each):
the chunks that hold only the fill value are absent from the v2 and v3
stores; zarr-python reads them as the fill value, as netCDF4-python reads
the `.nc` view.

oracle (root only, SKIPPED otherwise): with allow_other, the store of an
aggregation of deflated netCDF-4 partitions is computed (its chunk sizes
are the chunk shape times the element size, its listing the whole grid):
two aggregations whose partitions hold other values, one compressing well
and one not, show the same sizes and listings; the store of a netCDF-4
file is passed through (its own chunk index).
"""
import errno
import json
import os
import struct
import subprocess
import sys

import h5py
import netCDF4
import numpy as np
import xarray as xr
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
import make_aggregations  # noqa: E402
from test_mount import SKIP, Mount, check, run_cases  # noqa: E402
from test_zarr_view import check_zarrita, compare_xarray, raw_values, same_attribute  # noqa: E402

FILL_F4 = np.float32(-999)
FILL_I8 = np.int64(-(2 ** 62))


def source_file(path):
    """The netCDF-4 file the store is compared against; returns {variable: passed through}."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "pass-through source"
        ds.Conventions = "CF-1.8"
        ds.createDimension("time", None)
        ds.createDimension("y", 6)
        ds.createDimension("x", 10)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01 00:00:00"
        t.calendar = "standard"
        t[:] = np.arange(8) * 0.5
        rng = np.random.default_rng(7)
        tas = ds.createVariable("tas", "f4", ("time", "y", "x"), zlib=True, shuffle=True, complevel=4,
                                chunksizes=(2, 3, 5), fill_value=FILL_F4)
        tas.units = "K"
        tas.standard_name = "air_temperature"
        tas[:, 0:3, :] = (rng.normal(280, 5, (8, 3, 10))).astype("f4")  # y 3..5 never written: 8 chunks absent
        pr = ds.createVariable("pr", "f8", ("time", "y", "x"), zlib=True, shuffle=True, chunksizes=(4, 6, 10))
        pr.units = "kg m-2 s-1"
        pr.scale_factor = 0.001
        pr[:] = rng.gamma(1.0, 2.0, (8, 6, 10))
        n = ds.createVariable("count", "i8", ("time", "x"), zlib=True, shuffle=False, chunksizes=(3, 4),
                              fill_value=FILL_I8)
        n.long_name = "64-bit counts"
        n[:] = np.arange(80, dtype="i8").reshape(8, 10) * (2 ** 40) - 5
        big = ds.createVariable("big", ">f4", ("y", "x"), zlib=True, shuffle=True, endian="big", chunksizes=(2, 10))
        big[:] = np.arange(60, dtype="f4").reshape(6, 10) / 3
        nofill = ds.createVariable("nofill", "i4", ("y", "x"), zlib=True, chunksizes=(3, 10))
        nofill[0:3, :] = np.arange(30).reshape(3, 10)  # never-written chunk, no _FillValue: computed
        sums = ds.createVariable("sums", "f4", ("y", "x"), zlib=True, fletcher32=True, chunksizes=(3, 5))
        sums[:] = np.ones((6, 10), "f4")
    return {"tas": True, "pr": True, "count": True, "big": True, "nofill": False, "sums": False, "time": False}


def chunk_keys(zarray):
    per_dim = [-(-s // c) for s, c in zip(zarray["shape"], zarray["chunks"])]
    return [".".join(str(i) for i in index) for index in np.ndindex(*per_dim)]


def check_metadata(name, zarray, h5var, passed):
    if not passed:
        check(zarray["compressor"] is None and zarray["filters"] is None, "%s: computed, but %s" % (name, zarray))
        return
    check(zarray["chunks"] == list(h5var.chunks), "%s: chunks %s, the file's %s" % (name, zarray["chunks"],
                                                                                    h5var.chunks))
    check(zarray["compressor"]["id"] == "zlib", "%s: compressor %s" % (name, zarray["compressor"]))
    want_filters = [{"id": "shuffle", "elementsize": h5var.dtype.itemsize}] if h5var.shuffle else None
    check(zarray["filters"] == want_filters, "%s: filters %s, want %s" % (name, zarray["filters"], want_filters))
    check(np.dtype(zarray["dtype"]) == h5var.dtype, "%s: dtype %s, the file's %s" % (name, zarray["dtype"],
                                                                                     h5var.dtype.str))


def check_chunk_bytes(store, name, zarray, h5var):
    """Each chunk file is h5py's read_direct_chunk of the chunk; never-allocated chunks are absent."""
    listed = set(os.listdir(os.path.join(store, name))) - {".zarray", ".zattrs"}
    absent = 0
    for key in chunk_keys(zarray):
        offset = tuple(int(i) * c for i, c in zip(key.split("."), h5var.chunks))
        info = h5var.id.get_chunk_info_by_coord(offset)
        path = os.path.join(store, name, key)
        if info.byte_offset is None:
            absent += 1
            check(not os.path.exists(path) and key not in listed, "%s/%s: never allocated, yet shown" % (name, key))
            continue
        _, want = h5var.id.read_direct_chunk(offset)
        with open(path, "rb") as f:
            got = f.read()
        check(got == want, "%s/%s: %d bytes differ from h5py's %d stored bytes" % (name, key, len(got), len(want)))
        check(os.stat(path).st_size == len(want), "%s/%s: stat size" % (name, key))
        check(key in listed, "%s/%s: not listed" % (name, key))
    check(len(listed) == len(chunk_keys(zarray)) - absent, "%s: listing %s" % (name, sorted(listed)))
    return absent


def compare_values(store, paths):
    """zarr-python reads every array as netCDF4-python reads each of `paths` (raw values)."""
    group = zarr.open_consolidated(store, mode="r")
    for path in paths:
        with netCDF4.Dataset(path) as nc:
            nc.set_auto_maskandscale(False)
            check(sorted(group.array_keys()) == sorted(nc.variables), "arrays %s" % sorted(group.array_keys()))
            for name, v in nc.variables.items():
                got, want = group[name][...], v[...]
                check(got.shape == want.shape and np.array_equal(got, want, equal_nan=True),
                      "%s (%s): values\n%s\nwant\n%s" % (name, path, got, want))
                if "_FillValue" in v.ncattrs():
                    check(same_attribute(group[name].fill_value, v.getncattr("_FillValue")), "%s fill_value" % name)


def case_read(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    original = os.path.join(src, "pass.nc")
    passed = source_file(original)
    with Mount(src, "zarr_chunks=stored") as m, h5py.File(original, "r") as h5:
        store = m.path("pass.zarr")
        meta = json.load(open(os.path.join(store, ".zmetadata")))["metadata"]
        absent = 0
        for name, through in passed.items():
            zarray = meta[name + "/.zarray"]
            check_metadata(name, zarray, h5[name], through)
            if through:
                absent += check_chunk_bytes(store, name, zarray, h5[name])
            else:
                listed = set(os.listdir(os.path.join(store, name))) - {".zarray", ".zattrs"}
                check(listed == set(chunk_keys(zarray)), "%s: computed, every chunk listed" % name)
        check(absent == 8, "chunks never allocated: %d, want 8 (tas)" % absent)
        compare_values(store, [m.path("pass.nc"), original])
        compare_xarray(store, m.path("pass.nc"), "pass")
        with xr.open_zarr(store) as z:
            check(int(np.isnan(z["tas"].values).sum()) == 8 * 3 * 10, "xarray: the absent chunks read as NaN")
        check(m.alive(), "the daemon died")
    with Mount(src) as m:
        store = m.path("pass.zarr")
        meta = json.load(open(os.path.join(store, ".zmetadata")))["metadata"]
        for name in passed:
            check(meta[name + "/.zarray"]["compressor"] is None, "by default (computed): %s compressed" % name)
        compare_values(store, [m.path("pass.nc")])
    print("passed through: %s; %d chunks absent; bytes equal h5py's read_direct_chunk" %
          (sorted(k for k, v in passed.items() if v), absent))


def check_v3_chunks(store, name, h5var):
    """v3: the codecs after `bytes`, each chunk file c/i/j the stored chunk, the never-allocated ones absent."""
    node = json.load(open(os.path.join(store, name, "zarr.json")))
    names = [c["name"] for c in node["codecs"]]
    want = ["bytes"] + (["numcodecs.shuffle"] if h5var.shuffle else []) + ["numcodecs.zlib"]
    check(names == want and node["chunk_grid"]["configuration"]["chunk_shape"] == list(h5var.chunks),
          "%s: zarr.json %s" % (name, node))
    absent = 0
    per_dim = [-(-s // c) for s, c in zip(h5var.shape, h5var.chunks)]
    for index in np.ndindex(*per_dim):
        offset = tuple(i * c for i, c in zip(index, h5var.chunks))
        path = os.path.join(store, name, "c", *[str(i) for i in index])
        if h5var.id.get_chunk_info_by_coord(offset).byte_offset is None:
            absent += 1
            check(not os.path.exists(path) and os.path.basename(path) not in os.listdir(os.path.dirname(path)),
                  "%s: never allocated, yet shown" % path)
            continue
        with open(path, "rb") as f:
            check(f.read() == h5var.id.read_direct_chunk(offset)[1], "%s: bytes differ from h5py's" % path)
    return absent


def case_v3(work):
    """zarr_format=3: the same chunks with numcodecs.shuffle and numcodecs.zlib; zarrita and the mount's own
    v3 reader (a cp -r copy mounted as a source) read the values of the .nc view."""
    src, again = os.path.join(work, "src"), os.path.join(work, "again")
    os.makedirs(src)
    os.makedirs(again)
    original = os.path.join(src, "pass.nc")
    passed = source_file(original)
    passed["nofill"] = True  # every v3 array has a fill_value: here the type's default, the file's fill
    with Mount(src, "zarr_format=3,zarr_chunks=stored") as m, h5py.File(original, "r") as h5:
        store = m.path("pass.zarr")
        absent = sum(check_v3_chunks(store, name, h5[name]) for name, through in passed.items() if through)
        check(absent == 9, "v3: chunks never allocated: %d, want 9 (tas 8, nofill 1)" % absent)
        for name, through in passed.items():
            if not through:
                node = json.load(open(os.path.join(store, name, "zarr.json")))
                check([c["name"] for c in node["codecs"]] == ["bytes"], "%s: computed, but %s" % (name, node))
        r = subprocess.run(["cp", "-r", store, os.path.join(again, "pass.zarr")], capture_output=True, text=True)
        check(r.returncode == 0, "cp -r: %s" % r.stderr)
        want = raw_values(m.path("pass.nc"))
        with Mount(again) as copies:
            got = raw_values(copies.path("pass.nc"))
            for name, w in want.items():
                check(np.array_equal(got[name], w, equal_nan=True), "v3 copy %s: %s, want %s" % (name, got[name], w))
        check_zarrita([os.path.join(again, "pass.zarr")], lambda _: want)
        check(m.alive(), "the daemon died")
    print("v3: passed-through chunks read back by the mount's own reader and zarrita")


def btree_entries(data, h5var):
    """Where each chunk's key (size, mask, offsets) and address lie in a v1 B-tree node of the file."""
    found = {}
    rank = len(h5var.shape)
    for i in range(h5var.id.get_num_chunks()):
        info = h5var.id.get_chunk_info(i)
        key = struct.pack("<II", info.size, info.filter_mask) + b"".join(struct.pack("<Q", o) for o in info.chunk_offset)
        key += struct.pack("<Q", 0)  # the element offset
        at = data.find(key)
        check(at > 0 and data.find(key, at + 1) < 0, "chunk %d: its B-tree key is not found once" % i)
        address_at = at + len(key)
        check(struct.unpack_from("<Q", data, address_at)[0] == info.byte_offset, "chunk %d: address" % i)
        found[i] = (at, address_at, info)
    check(rank == 1, "one dimension")
    return found


def hostile_copies(src):
    sound = os.path.join(src, "sound.nc")
    with netCDF4.Dataset(sound, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 40)
        ds.createDimension("pad", 1 << 19)
        ds.createVariable("v", "f4", ("x",), zlib=True, shuffle=True, chunksizes=(10,))[:] = np.arange(40) / 7
        ds.sync()
        pad = ds.createVariable("pad", "f4", ("pad",), contiguous=True)  # 2 MiB after v's chunks
        pad[:] = np.random.default_rng(3).random(1 << 19)
    data = bytearray(open(sound, "rb").read())
    with h5py.File(sound, "r") as h5:
        entries = btree_entries(bytes(data), h5["v"])
    huge = bytearray(data)
    struct.pack_into("<I", huge, entries[1][0], 0x7fffff00)  # chunk 1: far larger than the file
    open(os.path.join(src, "huge.nc"), "wb").write(huge)
    large = bytearray(data)
    room = len(data) - entries[1][2].byte_offset
    check(room > (1 << 20) + 100, "the padding does not follow chunk 1 (%d bytes after it)" % room)
    struct.pack_into("<I", large, entries[1][0], room)  # inside the file, above deflate's bound for 40 bytes
    open(os.path.join(src, "large.nc"), "wb").write(large)
    overlap = bytearray(data)
    struct.pack_into("<Q", overlap, entries[2][1], entries[1][2].byte_offset + 1)  # chunk 2 inside chunk 1
    open(os.path.join(src, "overlap.nc"), "wb").write(overlap)


def case_hostile(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    hostile_copies(src)
    with Mount(src, "zarr_chunks=stored") as m:
        zarray = json.load(open(m.path("sound.zarr", "v", ".zarray")))
        check(zarray["compressor"]["id"] == "zlib", "the sound copy is passed through: %s" % zarray)
        for stem, reason in (("huge", "lies beyond the end of the file"), ("large", "more than a chunk of 40 bytes can need"),
                             ("overlap", "overlap in the file")):
            zarray = json.load(open(m.path(stem + ".zarr", "v", ".zarray")))
            check(zarray["compressor"] is None, "%s: passed through despite its chunk index: %s" % (stem, zarray))
            check(sorted(os.listdir(m.path(stem + ".zarr", "v"))) == [".zarray", ".zattrs", "0"],
                  "%s: listing %s" % (stem, os.listdir(m.path(stem + ".zarr", "v"))))
            log = m.log_text()
            check(any(stem + ".nc" in line and reason in line for line in log.splitlines()),
                  "%s: no log line naming the file and '%s':\n%s" % (stem, reason, log[-3000:]))
        for stem in ("huge", "large"):
            try:
                open(m.path(stem + ".zarr", "v", "0"), "rb").read()
                check(False, "%s: the chunk of the oversized index entry was read" % stem)
            except OSError as e:
                check(e.errno == errno.EIO, "%s: errno %s, want EIO" % (stem, e.errno))
        with open(m.path("overlap.zarr", "v", "0"), "rb") as f:
            try:
                f.read()  # what HDF5 itself would decode there, or EIO: never a crash
            except OSError as e:
                check(e.errno == errno.EIO, "overlap: errno %s, want EIO" % e.errno)
        check(m.alive(), "the daemon died")
    print("hostile chunk indexes: computed chunks, a log line each, EIO for the oversized chunk")


def deflated_partitions(folder, seed):
    """An NCA aggregation of two deflated netCDF-4 partitions: values that compress well (seed 0) or not."""
    make_aggregations.write_aggregation(folder, "agg", ["time", "x"], {"time": 4, "x": 30},
                                        {"time": [2, 2], "x": [30]})
    for part in ("part_00_00.nc", "part_01_00.nc"):
        path = os.path.join(folder, part)
        with netCDF4.Dataset(path) as old:
            values = old["tas"][...]
        os.unlink(path)
        if seed:
            values = np.random.default_rng(seed).normal(0, 1e6, values.shape).astype(values.dtype)
        else:
            values = np.zeros(values.shape, values.dtype)
        with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
            ds.createDimension("time", values.shape[0])
            ds.createDimension("x", values.shape[1])
            ds.createVariable("tas", values.dtype, ("time", "x"), zlib=True, shuffle=True,
                              chunksizes=(1, 30))[:] = values


def store_shape(store):
    """Every file of the store with its size, as a stat and a listing show them."""
    out = {}
    for folder, _, files in os.walk(store):
        for f in files:
            path = os.path.join(folder, f)
            out[os.path.relpath(path, store)] = os.stat(path).st_size
    return out


def case_oracle(work):
    if os.geteuid() != 0:
        print("SKIPPED: the oracle case mounts with allow_other, which needs root here")
        sys.exit(SKIP)
    src = os.path.join(work, "src")
    deflated_partitions(os.path.join(src, "smooth"), 0)
    deflated_partitions(os.path.join(src, "noisy"), 11)
    source_file(os.path.join(src, "own.nc"))
    with Mount(src, "allow_other,zarr_chunks=stored") as m:
        smooth, noisy = store_shape(m.path("smooth", "agg.zarr")), store_shape(m.path("noisy", "agg.zarr"))
        check(smooth == noisy, "the stores' sizes or listings depend on the partitions' values:\n%s\n%s" %
              (smooth, noisy))
        zarray = json.load(open(m.path("smooth", "agg.zarr", "tas", ".zarray")))
        check(zarray["compressor"] is None, "an aggregation's chunks passed through: %s" % zarray)
        own = json.load(open(m.path("own.zarr", "tas", ".zarray")))
        check(own["compressor"] is not None, "a netCDF-4 file's own chunks are not passed through: %s" % own)
        check(m.alive(), "the daemon died")
    print("allow_other: an aggregation's store shows the same sizes whatever its partitions hold")


ROW = 20_000_000  # int16: a row of 40 MB, so that the computed grid is one row a chunk


def declared_fragments(path):
    """A CF-1.13 aggregation of three rows: a constant 7, a missing fragment, a constant equal to _FillValue."""
    cdl = """netcdf declared {
dimensions: time = 3 ; x = %d ; f_time = 3 ; f_x = 1 ; j = 2 ; i = 3 ;
variables:
  short quality(time, x) ; quality:_FillValue = -1s ; quality:aggregated_dimensions = "time x" ;
    quality:aggregated_data = "unique_values: fragment_quality map: fragment_map" ;
  int fragment_map(j, i) ; fragment_map:_FillValue = -9 ;
  int fragment_quality(f_time, f_x) ; fragment_quality:_FillValue = -99 ;
:Conventions = "CF-1.13" ;
data:
  fragment_map = 1, 1, 1, %d, _, _ ;
  fragment_quality = 7, _, -1 ;
}
""" % (ROW, ROW)
    r = subprocess.run(["ncgen", "-4", "-o", path], input=cdl, capture_output=True, text=True)
    check(r.returncode == 0, "ncgen: %s" % r.stderr)


def case_fragments(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    declared_fragments(os.path.join(src, "declared.nc"))
    for fmt in ("2", "3"):
        with Mount(src, "zarr_format=" + fmt) as m:
            if fmt == "2":
                store = m.path("declared.zarr")
                check(sorted(os.listdir(os.path.join(store, "quality"))) == [".zarray", ".zattrs", "0.0"],
                      "v2 listing %s" % os.listdir(os.path.join(store, "quality")))
                check(not os.path.exists(os.path.join(store, "quality", "1.0")), "v2: a fill-only chunk is there")
                a = zarr.open_consolidated(store, mode="r")["quality"]
                check(a.chunks == (1, ROW), "v2 chunks %s" % (a.chunks,))
                got = a[:, :5]
            else:
                folder = m.path("declared.zarr", "quality", "c")
                check(sorted(os.listdir(folder)) == ["0", "1", "2"], "v3 c/: %s" % os.listdir(folder))
                check(os.listdir(os.path.join(folder, "0")) == ["0"] and os.listdir(os.path.join(folder, "1")) == [],
                      "v3 listing")
                check(not os.path.exists(os.path.join(folder, "2", "0")), "v3: a fill-only chunk is there")
                got = None
            with netCDF4.Dataset(m.path("declared.nc")) as nc:
                nc.set_auto_maskandscale(False)
                want = nc["quality"][:, :5]
            check(np.array_equal(want, [[7] * 5, [-1] * 5, [-1] * 5]), ".nc view: %s" % want)
            if got is not None:
                check(np.array_equal(got, want), "zarr-python: %s, want %s" % (got, want))
            check(m.alive(), "the daemon died")
    print("chunks in fragments declared missing, or constant at the fill value, are absent (v2 and v3)")


CASES = {"read": case_read, "v3": case_v3, "hostile": case_hostile, "oracle": case_oracle,
         "fragments": case_fragments}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-zarr-pass-"))
