#!/usr/bin/python3
"""Kerchunk reference sets in SOURCE, served as NAME.nc/.ds/.ncs/.vds.

Run as: test_reference_sets.py CASE   (CASE: sources | hostile | remote)
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

sources: reference sets written here the way kerchunk writes them
(kerchunk_style.py: h5py's chunk information for a netCDF-4 file, offsets
from the header of classic files) for a deflated+shuffled netCDF-4 file with
unwritten chunks, a classic file, two classic files combined along time
(templates, a relative URL), a version-0 set of inline chunks, and chunks
encoded by numcodecs (zstd, blosc, lz4, gzip, bz2, lzma, delta,
fixedscaleoffset) in a file of their own, also under a name given by
-o refs=GLOB, and a Zarr store written by zarr (arrays in order F of ranks 1
to 5 and several dtypes; bz2, lzma, zstd, zlib) referenced the way kerchunk's
single_zarr references one. Read through a real mount by netCDF4-python, ncdump and
NCO (ncks), compared with the values of the source files (or of the arrays
numcodecs encoded); `ncafs export`, `inspect` and `check` take them too.

hostile: ranges beyond a file's end, a huge shape, decompression bombs
(zlib, zstd without a declared size, blosc, bz2, lzma), truncated bz2 and
lzma streams, paths outside SOURCE (/etc/shadow, ../), a symlink out, a URL
not allowed, an order other than C or F, a raw lzma stream, conflicting
dimensions, "gen": each read fails with EIO or the array (or set) is left
out with a log line naming the file and the reason; the daemon stays up and
its memory bounded.

remote: the numcodecs chunks served by nginx, referenced by http:// URLs
(through a template): read under allow_root=URL, EIO for a URL outside it.
"""
import errno
import json
import lzma
import os
import shutil
import subprocess
import sys
import zlib

import netCDF4
import numcodecs
import numpy as np
import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
sys.path.insert(0, HERE)

import kerchunk_style as ks  # noqa: E402
import servers  # noqa: E402  (tests/remote: nginx on a free port)
from test_mount import NCAFS, SKIP, Mount, check, ncdump_variable, read_netcdf4, run_cases  # noqa: E402


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def write_netcdf4(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "deflated"
        ds.createDimension("time", 6)
        ds.createDimension("lat", 5)
        ds.createDimension("lon", 7)
        t = ds.createVariable("t", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True, chunksizes=(2, 3, 4),
                              fill_value=np.float32(-999))
        t.units = "K"
        t.valid_range = np.array([-100, 400], "f4")
        t[0:4] = np.arange(4 * 5 * 7, dtype="f4").reshape(4, 5, 7) / 7  # time 4..5: chunks never written
        ds.createVariable("lat", "f8", ("lat",))[:] = np.linspace(-60, 60, 5)
        n = ds.createVariable("n", "i2", ("time",), zlib=True, chunksizes=(4,))
        n[:] = [1, -2, 3, -4, 5, -6]


def write_classic(path, first_time, values_offset):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.source = "classic"
        ds.createDimension("time", None)
        ds.createDimension("x", 3)
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(first_time, first_time + 2, dtype="f8")
        ds.createVariable("x", "i4", ("x",))[:] = [10, 20, 30]
        rec = ds.createVariable("rec", "i2", ("time", "x"))
        rec[:] = (np.arange(6, dtype="i2") + values_offset).reshape(2, 3)
        ds.createVariable("z", "f8", ("x",))[:] = [0.5, -1.5, 2.5]


def same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    check(got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want, equal_nan=got.dtype.kind == "f"),
          "%s: got %r (%s), want %r (%s)" % (what, got, got.dtype, want, want.dtype))


def read_all(path, var):
    return read_netcdf4(path, var)


def nco_values(path, var, work):
    """The values NCO copies out of path (ncks -v VAR), read back by netCDF4-python."""
    out = os.path.join(work, "nco-%s.nc" % var)
    subprocess.run(["ncks", "-O", "-v", var, path, out], check=True, capture_output=True)
    values = read_netcdf4(out, var)
    os.unlink(out)
    return values


# --- numcodecs-encoded chunks ---------------------------------------------

CODEC_ARRAYS = {
    # name: (dtype, compressor, filters, second chunk stored)
    "z_zstd": ("<f4", numcodecs.Zstd(level=3), [], True),
    "z_blosc": ("<f8", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE), [], True),
    "z_blosc_zstd": ("<i4", numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE), [], True),
    "z_lz4": ("<i2", numcodecs.LZ4(), [], True),
    "z_gzip": (">i4", numcodecs.GZip(level=5), [], True),
    "z_delta": ("<i8", numcodecs.Zlib(level=1), [numcodecs.Delta(dtype="<i8")], True),
    "z_fso": ("<f8", None, [numcodecs.FixedScaleOffset(offset=-10, scale=10, dtype="<f8", astype="<u2")], True),
    "z_shuffle": (">f4", numcodecs.Zlib(level=6), [numcodecs.Shuffle(elementsize=4)], True),
    "z_missing": ("<f4", numcodecs.Zstd(level=1), [], False),
    "z_bz2": ("<f8", numcodecs.BZ2(level=9), [], True),
    "z_lzma": ("<i4", numcodecs.LZMA(), [], True),
    "z_lzma_alone": (">f4", numcodecs.LZMA(format=lzma.FORMAT_ALONE), [], True),
    "z_bz2_shuffle": ("<i8", numcodecs.BZ2(level=1), [numcodecs.Shuffle(elementsize=8)], True),
}


# --- a Zarr store written by zarr (numcodecs inside), referenced as kerchunk's
# single_zarr does: metadata inline, each chunk file a whole-object reference.

ZARR_ARRAYS = {
    # name: (dtype, shape, chunks, order, compressor, filters); values np.arange-based
    "f_bz2_3d": ("<f4", (3, 4, 5), (2, 3, 5), "F", numcodecs.BZ2(level=5), None),
    "f_lzma_2d": (">i2", (5, 7), (2, 3), "F", numcodecs.LZMA(), None),
    "f_raw_4d": ("|u1", (2, 3, 4, 5), (1, 2, 3, 5), "F", None, None),
    "f_zlib_1d": ("<i8", (10,), (4,), "F", numcodecs.Zlib(level=3), [numcodecs.Delta(dtype="<i8")]),
    "f_lzma_f8": ("<f8", (4, 6), (4, 6), "F", numcodecs.LZMA(preset=9), [numcodecs.Shuffle(elementsize=8)]),
    "f_u8_5d": ("<u8", (2, 2, 3, 2, 3), (1, 2, 2, 2, 3), "F", numcodecs.Zstd(level=1), None),
    "c_lzma_3d": ("<u2", (3, 4, 5), (2, 2, 5), "C", numcodecs.LZMA(format=lzma.FORMAT_ALONE), None),
}


def write_zarr_set(folder):
    """parity.zarr written by zarr, and parity.json referencing it; {name: values as zarr reads them}."""
    import zarr
    store = os.path.join(folder, "parity.zarr")
    group = zarr.open_group(store, "w")
    expected = {}
    for name, (dtype, shape, chunks, order, compressor, filters) in ZARR_ARRAYS.items():
        ramp = np.arange(int(np.prod(shape))).reshape(shape) * 7
        values = (ramp + 3 if np.dtype(dtype).kind == "u" else ramp - 11).astype(dtype)  # never the fill 0
        a = group.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype, order=order, compressor=compressor,
                                 filters=filters, fill_value=0)
        a[...] = values
        a.attrs["_ARRAY_DIMENSIONS"] = ["%s_%d" % (name, k) for k in range(len(shape))]
        back = np.asarray(zarr.open_array(os.path.join(store, name), "r")[...])
        check(np.array_equal(back, values), "zarr reads back %s" % name)
        expected[name] = back.astype(back.dtype.newbyteorder("="))
    refs = {}
    for root, _, files in os.walk(store):
        for f in files:
            key = os.path.relpath(os.path.join(root, f), store)
            if f.startswith("."):
                with open(os.path.join(root, f)) as text:
                    refs[key] = text.read()
            else:
                refs[key] = [os.path.join("parity.zarr", key)]
    write_json(os.path.join(folder, "parity.json"), ks.version1(refs))
    return expected


def codec_values(name, dtype):
    v = np.arange(24).reshape(6, 4) * 3 - 20
    if name == "z_fso":
        return (v / 10.0).astype(dtype)
    return v.astype(dtype)


def write_codec_set(folder):
    """codecs.json and blob.bin: each array's chunks encoded by numcodecs; {name: values}."""
    refs = {".zgroup": json.dumps({"zarr_format": 2}), ".zattrs": json.dumps({"history": "numcodecs"})}
    expected = {}
    blob = bytearray()
    for name, (dtype, compressor, filters, second) in CODEC_ARRAYS.items():
        values = codec_values(name, dtype)
        fill = "NaN" if name == "z_missing" else None
        refs[name + "/.zarray"] = ks.zarray(values.shape, (3, 4), dtype, fill, [f.get_config() for f in filters] or None,
                                            compressor.get_config() if compressor else None)
        refs[name + "/.zattrs"] = json.dumps({"_ARRAY_DIMENSIONS": ["y", "x"], "codec": name})
        decoded = []  # what numcodecs itself decodes (fixedscaleoffset is lossy)
        for c in range(2 if second else 1):
            data = values[3 * c:3 * c + 3].copy()
            for f in filters:
                data = f.encode(data)
            encoded = bytes(compressor.encode(data)) if compressor else bytes(np.asarray(data).tobytes())
            refs["%s/%d.0" % (name, c)] = ["blob.bin", len(blob), len(encoded)]
            blob += encoded
            back = compressor.decode(encoded) if compressor else encoded
            for f in reversed(filters):
                back = f.decode(back)
            decoded.append(np.frombuffer(bytes(back), dtype).reshape(3, 4))
        if not second:
            decoded.append(np.full((3, 4), np.nan, dtype))
        expected[name] = np.concatenate(decoded).astype(np.dtype(dtype).newbyteorder("="))
    with open(os.path.join(folder, "blob.bin"), "wb") as f:
        f.write(blob)
    write_json(os.path.join(folder, "codecs.json"), ks.version1(refs))
    return expected


def write_inline_v0(folder):
    """inline.json (version 0): chunks inline (base64 and text), a scalar, a whole-object reference."""
    a = np.arange(6, dtype="<u2").reshape(2, 3)
    s = np.array(2.5, "<f8")
    w = np.array([7, 8, 9, 10], "<i4")
    with open(os.path.join(folder, "whole.bin"), "wb") as f:
        f.write(w.tobytes())
    import base64
    refs = {
        ".zgroup": json.dumps({"zarr_format": 2}),
        ".zattrs": json.dumps({"numbers": [1, 2.5], "flag": 3}),
        "a/.zarray": ks.zarray([2, 3], [2, 3], "<u2"),
        "a/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["p", "q"]}),
        "a/0.0": "base64:" + base64.b64encode(a.tobytes()).decode(),
        "s/.zarray": ks.zarray([], [], "<f8"),
        "s/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": []}),
        "s/0": "base64:" + base64.b64encode(s.tobytes()).decode(),
        "c/.zarray": ks.zarray([5], [5], "|S1"),
        "c/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["chars"]}),
        "c/0": "hello",
        "w/.zarray": ks.zarray([4], [4], "<i4"),
        "w/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["four"]}),
        "w/0": ["whole.bin"],
        # "/" between chunk indices; chunk (1, 0) absent: fill_value null reads as 0.
        "d/.zarray": json.dumps(dict(json.loads(ks.zarray([4, 3], [2, 3], "<i2")), dimension_separator="/")),
        "d/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["four", "three"]}),
        "d/0/0": "base64:" + base64.b64encode(np.arange(6, dtype="<i2").tobytes()).decode(),
    }
    write_json(os.path.join(folder, "inline.json"), refs)
    d = np.zeros((4, 3), "i2")
    d[:2] = np.arange(6).reshape(2, 3)
    return {"a": a, "s": s, "c": np.array([b"h", b"e", b"l", b"l", b"o"]), "w": w, "d": d}


def write_combined(folder):
    """A multi-file set along time: part1.nc by a template, part2.nc by a relative URL."""
    parts = os.path.join(folder, "parts")
    os.makedirs(parts)
    write_classic(os.path.join(parts, "part1.nc"), 0, 0)
    write_classic(os.path.join(parts, "part2.nc"), 2, 100)
    r1 = ks.classic_refs(os.path.join(parts, "part1.nc"), "{{d}}/part1.nc")
    r2 = ks.classic_refs(os.path.join(parts, "part2.nc"), "parts/part2.nc")
    refs = dict(r1)
    for name in ("time", "rec"):
        meta = json.loads(refs[name + "/.zarray"])
        meta["shape"][0] = 4
        refs[name + "/.zarray"] = json.dumps(meta)
        for key, value in r2.items():
            if key.startswith(name + "/") and not key.split("/")[1].startswith("."):
                index = key.split("/")[1].split(".")
                index[0] = str(int(index[0]) + 2)
                refs[name + "/" + ".".join(index)] = value
    write_json(os.path.join(folder, "combined.json"), ks.version1(refs, {"d": "file://" + parts}))
    with netCDF4.Dataset(os.path.join(parts, "part1.nc")) as a, netCDF4.Dataset(os.path.join(parts, "part2.nc")) as b:
        return {"time": np.concatenate([a["time"][:], b["time"][:]]),
                "rec": np.concatenate([np.asarray(a["rec"][:]), np.asarray(b["rec"][:])]),
                "z": np.asarray(a["z"][:]), "x": np.asarray(a["x"][:])}


def case_sources(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    write_netcdf4(os.path.join(src, "deflated.nc4"))
    write_json(os.path.join(src, "deflated.json"), ks.version1(ks.netcdf4_refs(os.path.join(src, "deflated.nc4"),
                                                                              "deflated.nc4")))
    write_classic(os.path.join(src, "classic.nc"), 0, 0)
    write_json(os.path.join(src, "cl.json"), ks.classic_refs(os.path.join(src, "classic.nc"),
                                                            "file://" + os.path.join(src, "classic.nc")))
    combined = write_combined(src)
    codecs = write_codec_set(src)
    parity = write_zarr_set(src)
    inline = write_inline_v0(src)
    write_json(os.path.join(src, "other.json"), {"a": 1, "b": [1, 2]})  # no reference set: a real file only

    shutil.copy(os.path.join(src, "codecs.json"), os.path.join(src, "alt.kc"))  # -o refs=*.kc
    with Mount(src, "refs=*.kc") as m:
        # Looked up before any listing: the refs=GLOB name is found from its stem.
        same(read_all(m.path("alt.nc"), "z_zstd"), codecs["z_zstd"], "alt.nc (refs=*.kc) z_zstd")
        names = os.listdir(m.mnt)
        check("alt.kc" in names and "alt.ds" in names, "alt.kc and its views listed: %s" % sorted(names))
        for stem in ("deflated", "cl", "combined", "codecs", "inline"):
            for view in ("nc", "ds", "ncs", "vds"):
                check(stem + "." + view in names, "%s.%s listed: %s" % (stem, view, sorted(names)))
        check("other.json" in names and "other.nc" not in names,
              "a JSON file that is no reference set has no twins: %s" % sorted(names))

        # netCDF-4 source: zlib+shuffle chunks, unwritten chunks as the fill value.
        for var in ("t", "lat", "n"):
            same(read_all(m.path("deflated.nc"), var), read_all(os.path.join(src, "deflated.nc4"), var), "deflated " + var)
            check(ncdump_variable(m.path("deflated.nc"), var) == ncdump_variable(os.path.join(src, "deflated.nc4"), var),
                  "ncdump of deflated %s" % var)
        same(nco_values(m.path("deflated.nc"), "t", work), read_all(os.path.join(src, "deflated.nc4"), "t"), "NCO t")
        with netCDF4.Dataset(m.path("deflated.nc")) as ds:
            check(ds["t"].units == "K" and ds.title == "deflated", "attributes of t and the file")
            check(ds["t"]._FillValue == np.float32(-999) and ds["t"].valid_range.dtype == np.float32,
                  "_FillValue and valid_range in the variable's type")

        # Classic source, and two classic files along time.
        for var in ("time", "x", "rec", "z"):
            same(read_all(m.path("cl.nc"), var), read_all(os.path.join(src, "classic.nc"), var), "classic " + var)
            same(read_all(m.path("combined.nc"), var), combined[var], "combined " + var)
        dumped = ncdump_variable(m.path("combined.nc"), "rec").split("=", 1)[1].strip(" ;\n")
        same(np.array([int(x) for x in dumped.replace("\n", " ").split(",")], "i2").reshape(4, 3), combined["rec"],
             "ncdump of combined rec")
        same(nco_values(m.path("combined.nc"), "rec", work), combined["rec"], "NCO combined rec")

        # numcodecs codecs, and a chunk absent from the refs (NaN fill).
        for name, values in codecs.items():
            same(read_all(m.path("codecs.nc"), name), values, "codec " + name)

        # A zarr store: order F of every rank and several dtypes, bz2 and lzma, as zarr itself reads them.
        for name, values in parity.items():
            same(read_all(m.path("parity.nc"), name), values, "parity " + name)
            dumped = ncdump_variable(m.path("parity.nc"), name).split("=", 1)[1].strip(" ;\n")
            numbers = np.array([float(x) for x in dumped.replace("\n", " ").split(",")])
            same(numbers.reshape(values.shape), values.astype("f8"), "ncdump of parity " + name)

        # Version 0, inline chunks, a scalar, chars, a whole-object reference.
        with netCDF4.Dataset(m.path("inline.nc")) as ds:
            ds.set_auto_maskandscale(False)
            same(ds["a"][:], inline["a"], "inline a")
            same(ds["s"][...], inline["s"], "inline scalar")
            same(ds["w"][:], inline["w"], "whole-object w")
            same(ds["d"][:], inline["d"], "d (dimension_separator /, an absent chunk)")
            check("_FillValue" not in ds["d"].ncattrs(), "fill_value null: no _FillValue")
            check(bytes(ds["c"][:].tobytes()) == b"hello", "inline chars: %r" % ds["c"][:])
            check(list(ds.numbers) == [1.0, 2.5] and ds.flag == 3, "global attributes of numbers")

    # The commands take reference sets too.
    out = os.path.join(work, "export.nc")
    r = subprocess.run([NCAFS, "export", os.path.join(src, "codecs.json"), "--format", "nc", "-o", out],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "export: " + r.stdout + r.stderr)
    same(read_all(out, "z_blosc"), codecs["z_blosc"], "exported z_blosc")
    r = subprocess.run([NCAFS, "export", os.path.join(src, "deflated.nc"), "-o", out], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "export of the view name deflated.nc: " + r.stdout + r.stderr)
    same(read_all(out, "t"), read_all(os.path.join(src, "deflated.nc4"), "t"), "exported t")
    for command in ("inspect", "check"):
        r = subprocess.run([NCAFS, command, os.path.join(src, "combined.json")], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "%s: %s" % (command, r.stdout + r.stderr))
    with open(os.path.join(src, "combined.json")) as f:
        keys = json.load(f)["refs"]
    inline = sum(isinstance(v, str) for v in keys.values())
    out = subprocess.run([NCAFS, "inspect", os.path.join(src, "combined.json")], capture_output=True, text=True,
                         timeout=60).stdout
    check("reference set (version 1): %d reference(s), %d inline, to 2 object(s)" % (len(keys), inline) in out,
          "inspect counts the references:\n" + out)


# --- hostile reference sets -------------------------------------------------

def hostile_set(folder, name, zarray_text, chunk_ref, extra=None):
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "ok/.zarray": ks.zarray([2], [2], "<i4"), "ok/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["two"]}),
            "ok/0": "base64:AQAAAAIAAAA=",
            "v/.zarray": zarray_text, "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["n"]})}
    if chunk_ref is not None:
        refs["v/0"] = chunk_ref
    refs.update(extra or {})
    write_json(os.path.join(folder, name + ".json"), ks.version1(refs))


def bomb_zlib(size):
    c = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    return b"".join(c.compress(zeros) for _ in range(size >> 20)) + c.flush()


def bomb_zstd(size):
    c = zstandard.ZstdCompressor(level=1, write_content_size=False).compressobj()
    zeros = bytes(1 << 20)
    return b"".join(c.compress(zeros) for _ in range(size >> 20)) + c.flush()


def daemon_peak_rss(mount):
    with open("/proc/%d/status" % mount.process.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def read_fails_eio(path, what):
    try:
        with open(path, "rb") as f:
            f.read()
    except OSError as e:
        check(e.errno == errno.EIO, "%s: errno %s, want EIO" % (what, e.errno))
        return
    check(False, "%s: read succeeded" % what)


def case_hostile(work):
    src = os.path.join(work, "src")
    outside = os.path.join(work, "outside")
    os.makedirs(src)
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.bin"), "wb") as f:
        f.write(b"S" * 64)
    os.symlink(os.path.join(outside, "secret.bin"), os.path.join(src, "link.bin"))
    with open(os.path.join(src, "data.bin"), "wb") as f:
        f.write(bytes(100))
    n = 1024  # elements of v: a 4 KiB chunk
    v = ks.zarray([n], [n], "<i4")
    big = 256 << 20
    zeros = np.zeros(64 << 18, "<i4")  # 64 MiB
    bombs = {"zlib": bomb_zlib(big), "zstd": bomb_zstd(big),
             "blosc": numcodecs.Blosc(cname="lz4", clevel=9).encode(zeros[:16 << 18]),  # 16 MiB
             "bz2": bytes(numcodecs.BZ2(level=9).encode(zeros)),
             "lzma": bytes(numcodecs.LZMA(preset=1).encode(zeros))}
    honest = np.arange(n, dtype="<i4").tobytes()
    cut = {"bz2": bytes(numcodecs.BZ2(level=9).encode(honest))[:-20],
           "lzma": bytes(numcodecs.LZMA().encode(honest))[:-20]}
    offset = 100
    with open(os.path.join(src, "data.bin"), "ab") as f:
        for kind, data in bombs.items():
            f.write(data)
            hostile_set(src, "bomb_" + kind, ks.zarray([n], [n], "<i4", compressor={"id": kind}),
                        ["data.bin", offset, len(data)])
            offset += len(data)
        for kind, data in cut.items():
            f.write(data)
            hostile_set(src, "cut_" + kind, ks.zarray([n], [n], "<i4", compressor={"id": kind}),
                        ["data.bin", offset, len(data)])
            offset += len(data)
    eio = {
        "beyond": ["data.bin", 0, 10 ** 9],
        "beyond_offset": ["data.bin", 2 ** 63, 4096],
        "shadow": ["/etc/shadow", 0, 4096],
        "dotdot": ["../outside/secret.bin", 0, 64],
        "symlink": ["link.bin", 0, 64],
        "url": ["http://127.0.0.1:9/x.bin", 0, 4096],
    }
    for name, ref in eio.items():
        hostile_set(src, name, v, ref)
    left_out = {
        "huge": (ks.zarray([2 ** 40, 2 ** 40], [2 ** 20, 2 ** 20], "<f8"), "exceed"),
        "order_k": (v.replace('"C"', '"K"'), "order \\\"K\\\""),
        "zarray_shadow": (None, "outside the allowed roots"),
        "codec": (ks.zarray([n], [n], "<i4", compressor={"id": "lzf"}), "lzf"),
        "lzma_raw": (ks.zarray([n], [n], "<i4", compressor={"id": "lzma", "format": 3}), "format 3"),
    }
    for name, (text, _) in left_out.items():
        extra = {"v/.zarray": ["/etc/shadow"]} if text is None else None
        hostile_set(src, name, text or v, None, extra)
    write_json(os.path.join(src, "conflict.json"), ks.version1({
        "a/.zarray": ks.zarray([2], [2], "<i4"), "a/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["d"]}),
        "b/.zarray": ks.zarray([3], [3], "<i4"), "b/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["d"]})}))
    write_json(os.path.join(src, "templates.json"), {"version": 1, "refs": {".zgroup": "{}", "v/0": ["{{t}}" * 100000, 0, 1]},
                                                     "templates": {"t": "x" * 100000}})  # 10 GB of URL
    write_json(os.path.join(src, "gen.json"), {"version": 1, "gen": [{"key": "a/{{i}}", "url": "x", "dimensions": {"i": 3}}],
                                               "refs": {".zgroup": "{}"}})

    with Mount(src) as m:
        names = os.listdir(m.mnt)
        for name in ["bomb_" + k for k in bombs] + ["cut_" + k for k in cut] + list(eio):
            check(name + ".nc" in names, "%s.nc listed" % name)
            read_fails_eio(m.path(name + ".nc"), name)
        for name, (_, reason) in left_out.items():
            with netCDF4.Dataset(m.path(name + ".nc")) as ds:
                check("v" not in ds.variables and "ok" in ds.variables, "%s: v left out, ok kept" % name)
        for name in ("conflict", "gen", "templates"):
            check(name + ".nc" not in names, "%s.nc not shown: %s" % (name, sorted(names)))
        check(m.alive(), "the daemon is still up")
        peak = daemon_peak_rss(m)
        log = m.log_text()
    for name, (_, reason) in left_out.items():
        lines = [line for line in log.splitlines() if name + ".json" in line and "v: left out" in line]
        check(lines and reason.replace("\\", "") in lines[0], "%s: log line with %r:\n%s" % (name, reason, log))
    for name, reason in (("bomb_bz2", "bz2 data decode to more than 4096 bytes"),
                         ("bomb_lzma", "lzma data decode to more than 4096 bytes"),
                         ("cut_bz2", "bz2 data are truncated"), ("cut_lzma", "lzma data are truncated")):
        lines = [line for line in log.splitlines() if reason in line]
        check(lines and all("data.bin" in line and name + ".json" in line for line in lines),
              "%s: log line naming the file and %r:\n%s" % (name, reason, log))
    check("conflict.json" in log and "dimension d has length 3 in b and 2 in a" in log, "conflict logged:\n" + log)
    check("gen.json" in log and "\"gen\"" in log, "gen logged:\n" + log)
    check("templates.json" in log and "expands to more than 65536 bytes" in log, "template amplification logged")
    # `ncafs check` tries every reference (allowed, present, in range) and reports left-out arrays.
    for name, reason in (("shadow", "outside the allowed roots"), ("beyond", "lie beyond its end"),
                         ("symlink", "outside the allowed roots"), ("order_k", "order \"K\""),
                         ("conflict", "dimension d has length")):
        r = subprocess.run([NCAFS, "check", os.path.join(src, name + ".json")], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode != 0 and reason in r.stdout + r.stderr, "check %s: %d %s" % (name, r.returncode,
                                                                                       r.stdout + r.stderr))
    # The bombs decode to 256 MiB each: refused at the chunk's 4 KiB, never allocated.
    check(peak < (200 << 20), "daemon peak RSS %d MiB (a bomb expanded?)" % (peak >> 20))


def with_url(refs_path, out_path, url):
    """The set at refs_path with its "blob.bin" references read from {{u}}/blob.bin, u = url."""
    with open(refs_path) as f:
        refs = json.load(f)
    for key, value in refs["refs"].items():
        if isinstance(value, list):
            value[0] = "{{u}}/blob.bin"
    refs["templates"] = {"u": url}
    write_json(out_path, refs)


def case_remote(work):
    why = servers.skip_reason_nginx()
    if why:
        print("SKIPPED: " + why)
        sys.exit(SKIP)
    www, src = os.path.join(work, "www"), os.path.join(work, "src")
    for folder in ("data", "other"):
        os.makedirs(os.path.join(www, folder))
    os.makedirs(src)
    codecs = write_codec_set(os.path.join(www, "data"))
    shutil.copy(os.path.join(www, "data", "blob.bin"), os.path.join(www, "other", "blob.bin"))
    with servers.Nginx(www) as web:
        with_url(os.path.join(www, "data", "codecs.json"), os.path.join(src, "remote.json"), web.url + "/data")
        with_url(os.path.join(www, "data", "codecs.json"), os.path.join(src, "denied.json"), web.url + "/other")
        with Mount(src, "allow_root=%s/data/" % web.url) as m:
            for name, values in codecs.items():
                same(read_all(m.path("remote.nc"), name), values, "remote " + name)
            requests = [r for r in web.requests() if "/data/blob.bin" in r]
            # 17 chunks read: the object is opened once, not once per chunk.
            check(len(requests) <= 2, "requests for blob.bin:\n" + "\n".join(requests))
            read_fails_eio(m.path("denied.nc"), "a URL outside allow_root=")
            check("/other/blob.bin: refused: not under an allowed remote root" in m.log_text(),
                  "the refused URL is logged:\n" + m.log_text())


if __name__ == "__main__":
    sys.exit(run_cases({"sources": case_sources, "hostile": case_hostile, "remote": case_remote}, "ncafs-refs-"))
