#!/usr/bin/python3
"""Zarr directory stores in SOURCE, served as NAME.nc/.ds/.ncs/.vds.

Run as: test_zarr_stores.py CASE   (CASE: v2 | v3 | hostile)
Environment: NCAFS_BIN (the ncafs executable, set by CMake), NCAFS_NPM_DIR
(where zarrita is installed with npm; v3 only).

v2: stores written by python3-zarr (2.13): a group of arrays with zstd,
blosc (lz4, shuffle), lz4, zlib with a shuffle filter, bz2, lzma, order F,
dimension_separator "/", big-endian int16, int64, missing chunks, fill
values, a time coordinate with CF units, a nested group (left out), a
consolidated .zmetadata; and a store that is one array. Read through a real
mount by netCDF4-python, ncdump, NCO (ncks) and CDO, compared with what zarr
itself reads from the store.

v3: a group written by zarrita (npm, installed here; SKIPPED when npm cannot
install it): transpose (order F), big-endian bytes, zstd, blosc, int64,
"c.0" keys, missing chunks; sharded arrays (sharding_indexed, index at the
end and at the start, crc32c on the index and on chunks) written here from
the specification and read back by zarrita first. Read through a mount by
netCDF4-python, ncdump, ncks and CDO, compared with zarrita's values.

hostile: shapes and chunk counts that overflow, a chunk larger than its
array allows, a chunk of the wrong size, a zlib bomb, a dimension separator
with "..", a chunk and a .zarray that are symlinks out of the store, an
array folder that is a symlink, a store folder that is a symlink out of
SOURCE, v3 shards whose index points beyond the shard or fails its crc32c,
a chunk failing its crc32c, too many chunks per shard, 10^5 arrays: each read fails with EIO or the
array is left out with a log line naming the store and the reason; the
daemon stays up and its memory bounded.
"""
import json
import os
import shutil
import subprocess
import sys
import zlib

import netCDF4
import numcodecs
import numpy as np
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
sys.path.insert(0, os.path.join(HERE, "..", "reference_set"))
sys.path.insert(0, HERE)

import tiny_partitions as tp  # noqa: E402  (scratch)
import zarr_v3_shards as shards  # noqa: E402
from test_mount import SKIP, Mount, check, ncdump_variable, read_netcdf4, run_cases  # noqa: E402
import servers  # noqa: E402  (tests/remote: npm_install_once)
from test_reference_sets import daemon_peak_rss, read_fails_eio  # noqa: E402

ZARRITA_VERSION = "0.7.5"  # pinned: the writer whose stores the v3 case reads


def write_v2_group(path):
    """A group of arrays as xarray's to_zarr would leave them (with _ARRAY_DIMENSIONS)."""
    g = zarr.open_group(path, mode="w")
    g.attrs.update({"title": "written by zarr-python", "Conventions": "CF-1.8"})

    def array(name, dims, data=None, **kw):
        a = g.create_dataset(name, data=data, **kw) if data is not None else g.create_dataset(name, **kw)
        a.attrs["_ARRAY_DIMENSIONS"] = dims
        return a

    t = array("time", ["time"], np.arange(8, dtype="i8") * 6, chunks=(3,), fill_value=None)
    t.attrs.update({"units": "hours since 2000-01-01 00:00:00", "calendar": "proleptic_gregorian"})
    lat = array("lat", ["lat"], np.linspace(-45, 45, 4), chunks=(4,), compressor=numcodecs.LZ4(), fill_value=None)
    lat.attrs["units"] = "degrees_north"
    lon = array("lon", ["lon"], np.arange(5, dtype="f4") * 72, chunks=(2,), compressor=numcodecs.BZ2(), fill_value=None)
    lon.attrs["units"] = "degrees_east"
    tas = array("tas", ["time", "lat", "lon"], shape=(8, 4, 5), chunks=(3, 2, 2), dtype="<f4", fill_value=-999.0,
                compressor=numcodecs.Zstd(level=3), order="F")
    tas[0:6] = (np.arange(6 * 4 * 5, dtype="f4").reshape(6, 4, 5) / 8 + 250)  # time 6..7: chunks never written
    tas.attrs.update({"units": "K", "standard_name": "air_temperature"})
    pr = array("pr", ["time", "lat"], shape=(8, 4), chunks=(4, 4), dtype="<f8", fill_value=np.nan,
               compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
               dimension_separator="/")
    pr[4:8] = np.arange(16).reshape(4, 4) * 0.5
    array("code", ["lat", "lon"], np.arange(20, dtype=">i2").reshape(4, 5) - 7, chunks=(2, 5), fill_value=-1,
          compressor=numcodecs.Zlib(level=6), filters=[numcodecs.Shuffle(elementsize=2)])
    big = array("big", ["time"], np.array([2 ** 40, -3, 5, 7, 2 ** 62, 0, 1, -(2 ** 50)], dtype="<i8"), chunks=(5,),
                compressor=numcodecs.LZMA(preset=1), fill_value=None)
    big.attrs["long_name"] = "64-bit integers"
    sub = g.create_group("sub")
    sub.create_dataset("x", data=[1, 2, 3]).attrs["_ARRAY_DIMENSIONS"] = ["x"]
    zarr.consolidate_metadata(path)


def write_v2_single(path):
    a = zarr.open_array(path, mode="w", shape=(3, 4), chunks=(2, 3), dtype="<u2", fill_value=9,
                        compressor=numcodecs.GZip(level=4))
    a[0:2] = np.arange(8, dtype="u2").reshape(2, 4)
    a.attrs["_ARRAY_DIMENSIONS"] = ["row", "col"]


def cdo_values(path, var):
    """CDO's values of var (cdo output: the values of each time step)."""
    out = subprocess.run(["cdo", "-s", "output", "-selname," + var, path], capture_output=True, text=True,
                         timeout=120)
    check(out.returncode == 0, "cdo on %s: %s" % (path, out.stderr))
    return [float(line) for line in out.stdout.split() if line and line[0] in "-0123456789"]


def compare_reads(mnt_file, want, ncdump_checks, cdo_var, cdo_want):
    """netCDF4-python reads each array as `want` has it; ncdump and ncks show what is expected."""
    for name, values in want.items():
        got = read_netcdf4(mnt_file, name)
        check(got.dtype == values.dtype, "%s: type %s, want %s" % (name, got.dtype, values.dtype))
        check(np.array_equal(got, values, equal_nan=values.dtype.kind == "f"), "%s: %s\nwant %s" % (name, got, values))
    for name, text in ncdump_checks.items():
        block = ncdump_variable(mnt_file, name)
        check(text in block, "ncdump %s: %r not in %s" % (name, text, block))
        r = subprocess.run(["ncks", "-H", "-C", "-v", name, mnt_file], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and name in r.stdout, "ncks %s: %s %s" % (name, r.stdout[-300:], r.stderr))
    got = cdo_values(mnt_file, cdo_var)
    check(np.allclose(got, cdo_want), "cdo %s: %s\nwant %s" % (cdo_var, got, cdo_want))


def case_v2(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    write_v2_group(os.path.join(src, "era.zarr"))
    write_v2_single(os.path.join(src, "solo.zarr"))
    group = zarr.open_group(os.path.join(src, "era.zarr"), mode="r")
    want = {name: group[name][...] for name in ("time", "lat", "lon", "tas", "pr", "code", "big")}
    want["code"] = want["code"].astype("i2")  # netCDF reads native order
    with Mount(src) as m:
        names = sorted(os.listdir(m.mnt))
        check(names == ["era.ds", "era.nc", "era.ncs", "era.vds", "solo.ds", "solo.nc", "solo.ncs", "solo.vds"],
              "listing: %s" % names)
        era = m.path("era.nc")
        compare_reads(era, want, {"tas": "_, _", "big": "1099511627776, -3, 5, 7, 4611686018427387904",
                                  "time": "0, 6, 12, 18"},
                      "tas", want["tas"].ravel())
        with netCDF4.Dataset(era) as ds:
            check(ds.title == "written by zarr-python" and "sub" not in ds.variables and "x" not in ds.variables,
                  "global attributes, sub-group left out: %s" % ds)
            check(ds["tas"].units == "K" and ds["tas"]._FillValue == np.float32(-999), "tas attributes")
            dates = netCDF4.num2date(ds["time"][:], ds["time"].units, ds["time"].calendar)
            check(str(dates[1]) == "2000-01-01 06:00:00", "time decoded: %s" % dates)
        solo = read_netcdf4(m.path("solo.nc"), "solo")
        check(np.array_equal(solo, zarr.open_array(os.path.join(src, "solo.zarr"), mode="r")[...]), "solo: %s" % solo)
        for view in ("era.ds", "era.ncs", "era.vds"):
            with open(m.path(view), "rb") as f:
                check(len(f.read()) > 0, view + " reads")
        log = m.log_text()
    check("left out: " not in log and "error" not in log, "no array left out, no error:\n" + log)


def install_zarrita():
    """zarrita (pinned) under NCAFS_NPM_DIR/zarrita; its folder, or None with why."""
    prefix = os.path.join(os.environ.get("NCAFS_NPM_DIR") or "/tmp/ncafs-npm", "zarrita")
    why = servers.npm_install_once(prefix, "zarrita@" + ZARRITA_VERSION,
                                   lambda: os.path.isdir(os.path.join(prefix, "node_modules", "zarrita")))
    return (None, why) if why else (prefix, None)


def node(prefix, script, *args):
    """Runs one of this folder's scripts with node from the npm prefix (where its imports resolve)."""
    shutil.copy(os.path.join(HERE, script), os.path.join(prefix, script))
    r = subprocess.run(["node", os.path.join(prefix, script)] + list(args), capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, "node %s: %s" % (script, r.stderr[-2000:]))
    return r.stdout


def write_v3_shards(store, values):
    shards.sharded_array(os.path.join(store, "s_end"), values, (4, 6), (2, 3), -1.0, ("time", "y"),
                         skip={(1, 1)})
    shards.sharded_array(os.path.join(store, "s_start"), values, (2, 6), (2, 2), -1.0, ("time", "y"),
                         index_at_end=False, big_endian=True, skip={(2, 0)})


def case_v3(work):
    prefix, why = install_zarrita()
    if why:
        print("SKIPPED: " + why)
        sys.exit(SKIP)
    src = os.path.join(work, "src")
    store = os.path.join(src, "w.zarr")
    os.makedirs(src)
    node(prefix, "write_v3.mjs", store)
    values = np.arange(6 * 7, dtype="f4").reshape(6, 7) * 0.25
    write_v3_shards(store, values)
    read = json.loads(node(prefix, "read_v3.mjs", store, "time", "t", "n", "b", "s_end"))
    s_end = np.array(read["s_end"], "f4").reshape(6, 7)
    want_s_end = values.copy()
    want_s_end[2:4, 3:6] = -1  # the inner chunk (1, 1) left unwritten
    check(np.array_equal(s_end, want_s_end), "zarrita reads the sharded array as written:\n%s" % s_end)
    want_s_start = values.copy()
    want_s_start[4:6, 0:2] = -1
    want = {"time": np.array(read["time"], "f8"), "t": np.array(read["t"], "f4").reshape(6, 5),
            "n": np.array([int(v) for v in read["n"]], "i8"), "b": np.array(read["b"], "i2"), "s_end": s_end,
            "s_start": want_s_start}
    check(want["t"][5, 0] == -999 and want["n"][3] == 2 ** 40, "zarrita's values: %s" % read)
    with Mount(src) as m:
        check(sorted(os.listdir(m.mnt)) == ["w.ds", "w.nc", "w.ncs", "w.vds"], "listing %s" % os.listdir(m.mnt))
        compare_reads(m.path("w.nc"), want, {"t": "3.75, 4, 4.25, 4.5, 4.75", "n": "1099511627776",
                                             "s_start": "_, _"}, "s_end", want_s_end.ravel())
        with netCDF4.Dataset(m.path("w.nc")) as ds:
            check(ds.title == "written by zarrita" and ds.answer == 42 and ds["time"].units.startswith("days"),
                  "attributes: %s" % ds)
            check("sub" not in ds.variables, "sub-group left out")
        log = m.log_text()
    check("refused" not in log and "left out: " not in log, "no array left out:\n" + log)


def v2_array(store, name, zarray, chunks=None, dims=("d",)):
    folder = os.path.join(store, name)
    os.makedirs(folder, exist_ok=True)
    meta = {"zarr_format": 2, "dtype": "<i4", "order": "C", "fill_value": 0, "compressor": None, "filters": None}
    meta.update(zarray)
    with open(os.path.join(folder, ".zarray"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(folder, ".zattrs"), "w") as f:
        json.dump({"_ARRAY_DIMENSIONS": list(dims)[:len(meta["shape"])]}, f)
    for key, data in (chunks or {}).items():
        with open(os.path.join(folder, key), "wb") as f:
            f.write(data)
    return folder


def zlib_bomb(size):
    c = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    return b"".join(c.compress(zeros) for _ in range(size >> 20)) + c.flush()


def write_hostile_v2(src, outside):
    """One store per hostile array (each beside a sound array "ok"): {store: (reason, eio)}."""
    cases = {}

    def store(name, reason, eio, **array):
        path = os.path.join(src, name + ".zarr")
        os.makedirs(path)
        with open(os.path.join(path, ".zgroup"), "w") as f:
            f.write('{"zarr_format": 2}')
        v2_array(path, "ok", {"shape": [4], "chunks": [4]}, {"0": np.arange(4, dtype="<i4").tobytes()})
        folder = v2_array(path, "v", **array)
        cases[name] = (reason, eio)
        return folder

    store("huge", "exceed", False, zarray={"shape": [2 ** 40, 2 ** 40], "chunks": [1, 1]}, dims=("d", "e"))
    store("overflow", "exceed", False, zarray={"shape": [2 ** 63, 2 ** 63, 2 ** 63], "chunks": [2 ** 62] * 3},
          dims=("d", "e", "f"))
    store("dotdot", "dimension_separator", False, zarray={"shape": [4], "chunks": [4], "dimension_separator": "/.."})
    store("oversized", "more than the bound", True, zarray={"shape": [4], "chunks": [4]}, chunks={"0": bytes(3 << 20)})
    store("short", "the chunk needs 16 bytes", True, zarray={"shape": [4], "chunks": [4]}, chunks={"0": bytes(17)})
    store("bomb", "decode to more than", True, zarray={"shape": [1024], "chunks": [1024], "compressor": {"id": "zlib"}},
          chunks={"0": zlib_bomb(256 << 20)}, dims=("b",))
    folder = store("chunk_link", "symlink", True, zarray={"shape": [4], "chunks": [4]})
    os.symlink(os.path.join(outside, "secret.bin"), os.path.join(folder, "0"))
    folder = store("zarray_link", "symlink", False, zarray={"shape": [4], "chunks": [4]})
    os.unlink(os.path.join(folder, ".zarray"))
    os.symlink(os.path.join(outside, "zarray.json"), os.path.join(folder, ".zarray"))
    return cases


def write_hostile_v3(src):
    cases = {}
    values = np.arange(16, dtype="f4").reshape(4, 4)
    for name, reason, corrupt in (("beyond", "lies beyond the shard", "beyond"), ("crc", "crc32c", "crc")):
        store = os.path.join(src, "shard_" + name + ".zarr")
        shards.write_node(store, {"zarr_format": 3, "node_type": "group", "attributes": {}})
        shards.sharded_array(os.path.join(store, "ok"), values, (4, 4), (2, 2), 0, ("d", "e"))
        shards.sharded_array(os.path.join(store, "v"), values, (4, 4), (2, 2), 0, ("d", "e"))
        shard = os.path.join(store, "v", "c", "0", "0")
        with open(shard, "r+b") as f:
            raw = bytearray(f.read())
            index = len(raw) - (16 * 4 + 4)
            if corrupt == "beyond":
                raw[index:index + 8] = (10 ** 12).to_bytes(8, "little")
                raw[-4:] = shards.crc32c(bytes(raw[index:-4])).to_bytes(4, "little")
            else:
                raw[-1] ^= 0xFF
            f.seek(0)
            f.write(raw)
        cases["shard_" + name] = (reason, True)
    store = os.path.join(src, "chunk_crc.zarr")  # a chunk whose crc32c does not match its bytes
    shards.write_node(store, {"zarr_format": 3, "node_type": "group", "attributes": {}})
    shards.sharded_array(os.path.join(store, "ok"), values, (4, 4), (2, 2), 0, ("d", "e"))
    shards.sharded_array(os.path.join(store, "v"), values, (4, 4), (2, 2), 0, ("d", "e"), big_endian=True)
    with open(os.path.join(store, "v", "c", "0", "0"), "r+b") as f:
        f.seek(20)  # inside the first chunk's gzip stream
        byte = f.read(1)
        f.seek(20)
        f.write(bytes([byte[0] ^ 0xFF]))
    cases["chunk_crc"] = ("fails its crc32c check", True)
    store = os.path.join(src, "shard_many.zarr")
    shards.write_node(store, {"zarr_format": 3, "node_type": "group", "attributes": {}})
    shards.sharded_array(os.path.join(store, "ok"), values, (4, 4), (2, 2), 0, ("d", "e"))
    node = {"zarr_format": 3, "node_type": "array", "shape": [2 ** 40], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2 ** 30]}},
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [1], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}]}}],
            "fill_value": 0, "dimension_names": ["z"]}
    shards.write_node(os.path.join(store, "v"), node)
    cases["shard_many"] = ("chunks per shard", False)
    return cases


def write_many_arrays(path, count):
    """count v3 arrays of one element each (hard links to one zarr.json):
    more than the store's bound of arrays."""
    shards.write_node(path, {"zarr_format": 3, "node_type": "group", "attributes": {}})
    node = {"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "int32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
            "codecs": [{"name": "bytes"}], "fill_value": 0, "dimension_names": ["one"]}
    for i in range(count):
        shared = os.path.join(path, ".shared%d" % (i // 50_000))  # a file has at most 65,000 links (ext4)
        if i % 50_000 == 0:
            shards.write_node(shared, node)
        folder = os.path.join(path, "a%06d" % i)
        os.mkdir(folder)
        os.link(os.path.join(shared, "zarr.json"), os.path.join(folder, "zarr.json"))


def case_hostile(work):
    # 10^5 array folders: made and removed in memory when /dev/shm has room
    # (on a disk shared with other jobs that took minutes, most of the test).
    with tp.scratch("ncafs-zarr-hostile-", 100_000 * 8192) as scratch:
        hostile_stores(scratch)


def hostile_stores(work):
    src, outside = os.path.join(work, "src"), os.path.join(work, "outside")
    os.makedirs(src)
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.bin"), "wb") as f:
        f.write(b"S" * 16)
    with open(os.path.join(outside, "zarray.json"), "w") as f:
        json.dump({"zarr_format": 2, "dtype": "<i4", "shape": [4], "chunks": [4], "order": "C", "fill_value": 0,
                   "compressor": None, "filters": None}, f)
    cases = write_hostile_v2(src, outside)
    cases.update(write_hostile_v3(src))
    write_v2_single(os.path.join(outside, "escape.zarr"))
    os.symlink(os.path.join(outside, "escape.zarr"), os.path.join(src, "escape.zarr"))
    write_many_arrays(os.path.join(src, "many.zarr"), 100_000)
    with Mount(src) as m:
        names = os.listdir(m.mnt)
        check("escape.nc" not in names and "escape.zarr" not in names, "a store linked out is not shown: %s" % names)
        for name, (reason, eio) in cases.items():
            check(name + ".nc" in names, "%s.nc listed" % name)
            if eio:
                read_fails_eio(m.path(name + ".nc"), name)
                continue
            with netCDF4.Dataset(m.path(name + ".nc")) as ds:
                check("v" not in ds.variables and "ok" in ds.variables, "%s: v left out, ok kept" % name)
        with netCDF4.Dataset(m.path("many.nc")) as ds:
            check(len(ds.variables) == 1000, "many: %d arrays shown, the bound is 1000" % len(ds.variables))
        check(m.alive(), "the daemon is still up")
        peak = daemon_peak_rss(m)
        log = m.log_text()
    for name, (reason, _) in cases.items():
        lines = [line for line in log.splitlines() if name + ".zarr" in line and reason in line]
        check(len(lines) >= 1, "%s: a log line naming the store and %r:\n%s" % (name, reason, log))
    check("many.zarr: more than 1000 arrays" in log, "many: the bound is logged")
    check(peak < (400 << 20), "daemon peak RSS %d MiB" % (peak >> 20))
    print("daemon peak RSS %d MiB (10^5 arrays, bombs, hostile shards)" % (peak >> 20))


CASES = {"v2": case_v2, "v3": case_v3, "hostile": case_hostile}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-zarr-"))
