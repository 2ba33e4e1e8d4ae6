#!/usr/bin/python3
"""The .vds views (OpenVDS containers written by ncafs) in a real mount.

Datasets are made here with netCDF4-python and ncgen: a 3-D file with
channels of every mapped type (float, double, int, short, byte, ubyte,
ushort, uint, uint64; an int64 left out), a 2-D file (tiles), a 4-D file,
a file of fills of every kind (each type; fills float32 holds, fills it does
not, default fills), and a CF-1.13 aggregation whose `quality` variable has
constant, missing and non-float32 constant fragments. Each NAME.vds is
decoded with vds_decode.py (numpy + zlib, checked against OpenVDS's own
fixtures) and must give, at every LOD n, the values netCDF4-python reads
from NAME.nc, decimated [::2**n] along every dimension, as OpenVDS reads a
LOD (the 4-D file's slowest dimension too, although it keeps one chunk per
LOD0 sample at every LOD).
Fills are NoValue exactly as docs/formats/vds-writer.md says, and no
channel has a null noValue. Constant and missing fragments must give constant
and NoValue hashes with no bytes. A .vds view copied into a new SOURCE must
read back (our reader, through its .nc view) as the original values, and
`ncafs export --format vds` must give the view's bytes; ranges read by six
threads at once must equal the whole file. A truncated partition gives EIO
and a log line naming it, not a crash, also to a reader that reads on into
it through batches made ahead in the background.
Environment: NCAFS_BIN; exit 77 = skipped (NCAFS_SKIP_FUSE=1 and no FUSE).
"""
import concurrent.futures
import contextlib
import errno
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
import test_mount  # noqa: E402  (Mount, fail, check, fuse_usable)
import vds_decode  # noqa: E402

import netCDF4  # noqa: E402

check = test_mount.check
LODS = 3
TYPES = {"f_float": "f4", "f_double": "f8", "f_int": "i4", "f_short": "i2", "f_byte": "i1", "f_ubyte": "u1",
         "f_ushort": "u2", "f_uint": "u4", "f_uint64": "u8"}


def make_types(path):
    """3-D channels of every mapped type over (time, y, x); an int64 left out."""
    rng = np.random.default_rng(7)
    shape = (70, 50, 130)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        for name, n in zip(("time", "y", "x"), shape):
            ds.createDimension(name, n)
        x = ds.createVariable("x", "f8", ("x",))
        x[:] = 10.0 + 0.5 * np.arange(shape[2])  # evenly spaced: coordinateMin/Max
        x.units = "m"
        y = ds.createVariable("y", "f8", ("y",))
        y[:] = np.arange(shape[1]) ** 2.0  # uneven: index coordinates
        for name, t in TYPES.items():
            info = np.iinfo(t) if t[0] in "iu" else None
            lo, hi = (max(info.min, -30000), min(info.max - 1, 60000)) if info else (-1e3, 1e3)
            values = rng.uniform(lo, hi, shape).astype(t)
            fill = None
            if name in ("f_float", "f_double", "f_short", "f_ubyte"):
                fill = np.array(-999 if t[0] != "u" else 200, t)
                values[5:9, 3:7, 20:40] = fill
                values[values == fill] = fill  # keep the fill where uniform() hit it
            v = ds.createVariable(name, t, ("time", "y", "x"), fill_value=fill)
            v.set_auto_maskandscale(False)
            v[:] = values
        ds.createVariable("f_int64", "i8", ("time", "y", "x"))[:] = 1


def make_small_ranks(source):
    with netCDF4.Dataset(os.path.join(source, "image.nc"), "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("row", 300)
        ds.createDimension("col", 270)
        ds.createVariable("img", "f8", ("row", "col"))[:] = np.arange(300 * 270, dtype="f8").reshape(300, 270) / 3.0
    with netCDF4.Dataset(os.path.join(source, "four.nc"), "w", format="NETCDF3_64BIT_OFFSET") as ds:
        for name, n in (("a", 3), ("t", 5), ("y", 40), ("x", 70)):
            ds.createDimension(name, n)
        ds.createVariable("v4", "f4", ("a", "t", "y", "x"))[:] = np.arange(3 * 5 * 40 * 70, dtype="f4").reshape(
            3, 5, 40, 70)
        # VDS dim 3 (a) lies outside the dimension group 012: 3 chunks at every LOD.
        ds.createVariable("w4", "f8", ("a", "t", "y", "x"))[:] = np.arange(3 * 5 * 40 * 70, dtype="f8").reshape(
            3, 5, 40, 70) * -0.5


def make_series(source):
    """Only 1-D variables: the .vds view holds them with a unit axis."""
    with netCDF4.Dataset(os.path.join(source, "series.nc"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", 1000)
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(1000) * 0.5
        v = ds.createVariable("level", "f4", ("time",), fill_value=-1.0)
        v.set_auto_maskandscale(False)
        values = np.sin(np.arange(1000) / 10.0).astype("f4")
        values[100:130] = -1.0
        v[:] = values
        ds.createVariable("count", "i2", ("time",))[:] = (np.arange(1000) % 300 - 150).astype("i2")


def make_aggregation(source):
    """CF-1.13 over time (4 fragments of 64): temp from files; quality from
    unique values 7.5, missing, 0.1 (not a float32), 3.25."""
    rng = np.random.default_rng(11)
    for k in range(4):
        with netCDF4.Dataset(os.path.join(source, "frag%d.nc" % k), "w", format="NETCDF3_CLASSIC") as ds:
            for name, n in (("time", 64), ("y", 20), ("x", 30)):
                ds.createDimension(name, n)
            ds.createVariable("temp", "f4", ("time", "y", "x"))[:] = rng.uniform(250, 300, (64, 20, 30))
    cdl = """netcdf agg {
dimensions: time = 256 ; y = 20 ; x = 30 ; f_time = 4 ; f_y = 1 ; f_x = 1 ; j = 3 ; i = 4 ;
variables:
  float temp ; temp:units = "K" ; temp:aggregated_dimensions = "time y x" ;
    temp:aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers" ;
  double quality ; quality:_FillValue = -999. ; quality:aggregated_dimensions = "time y x" ;
    quality:aggregated_data = "unique_values: fragment_quality map: fragment_map" ;
  double time(time) ; time:units = "days since 2000-01-01" ;
  int fragment_map(j, i) ;
  string fragment_uris(f_time, f_y, f_x) ;
  string fragment_identifiers ;
  double fragment_quality(f_time, f_y, f_x) ; fragment_quality:_FillValue = -999. ;
:Conventions = "CF-1.13" ;
data:
  time = %s ;
  fragment_map = 64, 64, 64, 64, 20, _, _, _, 30, _, _, _ ;
  fragment_uris = "frag0.nc", "frag1.nc", "frag2.nc", "frag3.nc" ;
  fragment_identifiers = "temp" ;
  fragment_quality = 7.5, _, 0.1, 3.25 ;
}
""" % ", ".join(str(0.25 * i) for i in range(256))
    cdl_path = os.path.join(source, "agg.cdl")
    with open(cdl_path, "w") as f:
        f.write(cdl)
    subprocess.run(["ncgen", "-4", "-o", os.path.join(source, "agg.nca"), cdl_path], check=True)
    os.unlink(cdl_path)


# name: (type, _FillValue or None, whether the .vds channel uses NoValue)
# per docs/formats/vds-writer.md: R32/R64 when float32(fill) is finite,
# U8/U16 always, U32/U64 only when float32 holds the fill exactly.
FILLS = {
    "r_float": ("f4", -999.0, True), "r_float_big": ("f4", 3.0e38, True),
    "r_double": ("f8", -999.0, True), "r_double_inexact": ("f8", 0.1, True),
    "r_double_huge": ("f8", 1e300, False), "r_int": ("i4", -2147483647, True),
    "r_short": ("i2", -32767, True), "r_byte": ("i1", -127, True),
    "r_ubyte": ("u1", 255, True), "r_ushort": ("u2", 65535, True),
    "r_uint": ("u4", 1000, True), "r_uint_big": ("u4", 4294967295, False),
    "r_uint64": ("u8", 2 ** 40, True), "r_uint64_big": ("u8", 18446744073709551614, False),
    "r_uint64_odd": ("u8", 2 ** 40 + 1, False),
}
# Variables without _FillValue, half written: netCDF's default fills are values.
DEFAULT_FILLS = {"d_" + name[2:]: t for name, t in TYPES.items()}


def make_fills(path):
    """(t, y, x) = (6, 20, 70) channels; fills in a box and scattered."""
    rng, shape = np.random.default_rng(3), (6, 20, 70)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        for name, n in (("t", 6), ("y", 20), ("x", 70)):
            ds.createDimension(name, n)
        # The primary channel: the first largest variable in file order.
        ds.createVariable("base", "f4", ("t", "y", "x"))[:] = rng.uniform(-5, 5, shape)
        for name, (t, fill, _) in FILLS.items():
            values = rng.uniform(0, 100, shape).astype(t)
            fill = np.array(fill, t)
            values[1:3, 2:9, 10:30] = fill
            values[rng.random(shape) < 0.05] = fill
            v = ds.createVariable(name, t, ("t", "y", "x"), fill_value=fill)
            v.set_auto_maskandscale(False)
            v[:] = values
        for name, t in DEFAULT_FILLS.items():
            v = ds.createVariable(name, t, ("t", "y", "x"))
            v[:3] = rng.uniform(0, 100, (3,) + shape[1:]).astype(t)  # t >= 3: netCDF's default fill


def fill_expectation(nc_path, name):
    """Values as the docs say the .vds must hold them: NaN where the fill is
    NoValue, the fill as a value like any other otherwise (default fills too)."""
    with netCDF4.Dataset(nc_path) as ds:
        v = ds.variables[name]
        v.set_auto_maskandscale(False)
        raw = v[...]
    values = np.asarray(raw).astype("f8")
    if name in FILLS and FILLS[name][2]:
        values[np.asarray(raw) == np.array(FILLS[name][1], FILLS[name][0])] = np.nan
    return values


def check_fills(mnt):
    vds = vds_decode.Vds(os.path.join(mnt, "fills.vds"))
    by_name = {ch["name"]: (c, ch) for c, ch in enumerate(vds.channels)}
    check(set(by_name) == {"base"} | set(FILLS) | set(DEFAULT_FILLS), "fills.vds channels %s" % sorted(by_name))
    for name, (c, ch) in by_name.items():
        check(ch.get("noValue") is not None, "%s: noValue is null" % name)
        want_novalue = FILLS[name][2] if name in FILLS else False
        check(ch.get("useNoValue", False) == want_novalue, "%s: useNoValue %s, want %s" % (name, ch.get("useNoValue"), want_novalue))
        if name == "base":
            continue
        want = fill_expectation(os.path.join(mnt, "fills.nc"), name)
        for lod in range(LODS + 1):
            got, dec = vds.read_values(c, lod), lod_view(want, lod)
            check(np.array_equal(got, dec, equal_nan=True),
                  "fills %s LOD%d: %d values differ" % (name, lod, np.sum(~((got == dec) | (np.isnan(got) & np.isnan(dec))))))


def check_four(mnt):
    """VDS dim 3 (3 samples) outside the group 012: 3 chunks at every LOD
    (one per LOD0 sample), read as 2 samples at LOD1 and LOD2, 1 at LOD3."""
    vds, names = check_dataset(mnt, "four", LODS)
    check(names == ["v4", "w4"], "four.vds channels %s" % names)
    for lod, chunks in enumerate([2 * 3, 3, 3, 3]):
        n = len(vds.layer(0, lod).entries)
        check(n == chunks, "four.vds LOD%d: %d chunks, want %d" % (lod, n, chunks))


def expected_values(nc_path, name):
    """float64 values netCDF4-python reads (masked -> NaN). Only an explicit
    _FillValue becomes NoValue: without one, no default-fill masking."""
    with netCDF4.Dataset(nc_path) as ds:
        v = ds.variables[name]
        v.set_auto_mask("_FillValue" in v.ncattrs())
        data = v[...]
        return np.ma.filled(np.ma.asarray(data).astype("f8"), np.nan)


def lod_view(want, lod):
    """The LOD `lod` of netCDF-order values as OpenVDS reads it: every
    2**lod-th sample along every dim, those outside the dimension group too
    (docs/formats/vds.md, "LOD n of every dimension")."""
    return want[tuple(slice(None, None, 1 << lod) for _ in range(want.ndim))]


def check_dataset(mnt, stem, lods):
    vds = vds_decode.Vds(os.path.join(mnt, stem + ".vds"))
    check(vds.lod_levels == lods, "%s.vds: %d LODs, want %d" % (stem, vds.lod_levels, lods))
    names = []
    for c, ch in enumerate(vds.channels):
        want = expected_values(os.path.join(mnt, stem + ".nc"), ch["name"])
        if want.ndim == 1:  # held over (unit axis, the variable's dimension)
            want = want.reshape(1, -1)
        for lod in range(lods + 1):
            got = vds.read_values(c, lod)
            dec = lod_view(want, lod)
            check(got.shape == dec.shape, "%s %s LOD%d: shape %s, want %s" % (stem, ch["name"], lod, got.shape, dec.shape))
            check(np.array_equal(got, dec, equal_nan=True),
                  "%s %s LOD%d: %d values differ from netCDF4-python's" % (stem, ch["name"], lod,
                                                                         np.sum(~((got == dec) | (np.isnan(got) & np.isnan(dec))))))
        names.append(ch["name"])
    return vds, names


def check_concurrent_reads(path):
    """Random ranges read by 6 threads before anything else touched the file
    (so the daemon, not the page cache, answers) equal the whole file."""
    size = os.path.getsize(path)
    rng = random.Random(5)
    ranges = [(rng.randrange(size), rng.randrange(1, 300000)) for _ in range(60)]

    def read(r):
        with open(path, "rb", buffering=0) as f:
            f.seek(r[0])
            return f.read(r[1])

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        parts = list(pool.map(read, ranges))
    with open(path, "rb") as f:
        whole = f.read()
    check(len(whole) == size, "%s: read %d of %d bytes" % (path, len(whole), size))
    for (off, n), got in zip(ranges, parts):
        check(got == whole[off:off + n], "%s: concurrent read at %d+%d differs" % (path, off, n))


def check_types(mnt):
    vds, names = check_dataset(mnt, "types", LODS)
    check(names[0] == "f_float" and set(names) == set(TYPES), "types.vds channels %s" % names)
    axes = vds.axes
    check([a["name"] for a in axes] == ["x", "y", "time"], "axes %s" % [a["name"] for a in axes])
    check((axes[0]["coordinateMin"], axes[0]["coordinateMax"], axes[0]["unit"]) == (10.0, 74.5, "m"), "x axis %s" % axes[0])
    meta = {m["name"]: m["value"] for m in vds.layout["metadata"]}
    check(meta.get("IndexCoordinates") == "y time", "metadata %s" % meta)
    check("f_int64" in meta.get("OmittedVariables", ""), "metadata %s" % meta)
    by_name = {ch["name"]: ch for ch in vds.channels}
    check(by_name["f_short"]["format"] == "Format_U16" and by_name["f_short"]["integerOffset"] == -32768,
          "f_short channel %s" % by_name["f_short"])
    check(by_name["f_int"]["format"] == "Format_R64" and by_name["f_byte"]["integerOffset"] == -128, "int/byte channels")
    check(by_name["f_float"]["useNoValue"] and by_name["f_float"]["noValue"] == -999, "noValue of f_float")
    check(vds.compression(0, 0) == "None", "compression %s" % vds.compression(0, 0))


def check_aggregation(mnt):
    vds, names = check_dataset(mnt, "agg", LODS)
    check(names == ["temp", "quality"], "agg channels %s" % names)
    kinds = vds.chunk_kinds(1, 0)  # quality, LOD0: 1 x 1 x 4 chunks, one per fragment
    check(len(kinds) == 4, "quality LOD0 has %d chunks" % len(kinds))
    entries = vds.layer(1, 0).entries
    want = [("constant", 7.5), ("novalue", None), ("data", None), ("constant", 3.25)]
    for i, (kind, value) in enumerate(want):
        e = entries[i]
        check(e.kind() == kind, "quality chunk %d: %s, want %s" % (i, e.kind(), kind))
        if kind != "data":
            check(e.offset == 0 and e.length == 0, "quality chunk %d stores %d bytes" % (i, e.length))
        if value is not None:
            check(e.constant() == value, "quality chunk %d constant %r" % (i, e.constant()))
    check(all(k[0] == "data" for k in vds.chunk_kinds(0, 0)), "temp chunks %s" % vds.chunk_kinds(0, 0))


def check_round_trip(mnt, stems):
    source = tempfile.mkdtemp(prefix="ncafs-vds-rt-")
    try:
        for stem in stems:
            shutil.copy(os.path.join(mnt, stem + ".vds"), os.path.join(source, stem + "_copy.vds"))
        with test_mount.Mount(source) as m:
            for stem in stems:
                vds = vds_decode.Vds(os.path.join(source, stem + "_copy.vds"))
                for ch in vds.channels:
                    want = expected_values(os.path.join(mnt, stem + ".nc"), ch["name"])
                    for lod in range(LODS + 1):  # our reader shows LOD n as NAME_lodN
                        name = ch["name"] + ("_lod%d" % lod if lod else "")
                        got = expected_values(m.path(stem + "_copy.nc"), name)
                        dec = lod_view(want, lod)
                        check(np.array_equal(got, dec, equal_nan=True), "%s round trip of %s differs" % (stem, name))
    finally:
        shutil.rmtree(source, ignore_errors=True)


def check_export(mnt, source, stem, name, format_args=("--format", "vds")):
    """export NAME --format vds, or export of the twin name NAME.vds, gives the view's bytes."""
    out = tempfile.NamedTemporaryFile(suffix=".vds", delete=False).name
    try:
        subprocess.run([test_mount.NCAFS, "export", os.path.join(source, name), *format_args,
                        "-o", "vds_lods=%d" % LODS, "-o", out], check=True)
        with open(out, "rb") as a, open(os.path.join(mnt, stem + ".vds"), "rb") as b:
            check(a.read() == b.read(), "export %s %s differs from %s.vds" % (name, format_args, stem))
    finally:
        os.unlink(out)


@contextlib.contextmanager
def mounted_with_truncated(make, fragment, size):
    """A mount (views nc and vds) of a source made by make(source) whose
    file `fragment` is then cut to `size` bytes; the source removed after."""
    source = tempfile.mkdtemp(prefix="ncafs-vdsw-bad-")
    try:
        make(source)
        with open(os.path.join(source, fragment), "r+b") as f:
            f.truncate(size)
        with test_mount.Mount(source, "views=nc,vds") as m:
            yield m
    finally:
        shutil.rmtree(source, ignore_errors=True)


def check_bad_partition():
    """A truncated partition: the view's size still comes from metadata, its
    header reads, and reading its chunks fails with EIO and a log line naming
    the partition, while the daemon lives on."""
    with mounted_with_truncated(make_aggregation, "frag3.nc", 100) as m:
        path = m.path("agg.vds")
        check(os.path.getsize(path) > 0, "agg.vds has no size")
        with open(path, "rb") as f:
            check(f.read(12) == b"HueDataStore", "agg.vds header unreadable")
        try:
            with open(path, "rb") as f:
                f.read()
            test_mount.fail("agg.vds read whole with a truncated partition")
        except OSError as e:
            check(e.errno == errno.EIO, "agg.vds read failed with %s, want EIO" % e)
        check(m.alive(), "ncafs died on a truncated partition")
        check("frag3.nc" in m.log_text(), "log does not name frag3.nc:\n" + m.log_text())


def make_big_aggregation(source):
    """3 classic fragments of 40 time steps of tas(time, lat, lon) float
    (10 MB each): a .vds view of several 8 MiB batches, read on from one to
    the next (the next made in the background)."""
    for k in range(3):
        with netCDF4.Dataset(os.path.join(source, "big%d.nc" % k), "w", format="NETCDF3_CLASSIC") as ds:
            for name, n in (("time", 40), ("lat", 180), ("lon", 360)):
                ds.createDimension(name, n)
            ds.createVariable("tas", "f4", ("time", "lat", "lon"))[:] = np.full((40, 180, 360), k, "f4")
    cdl = """netcdf big {
dimensions: time = 120 ; lat = 180 ; lon = 360 ; f_time = 3 ; f_lat = 1 ; f_lon = 1 ; j = 3 ; i = 3 ;
variables:
  float tas ; tas:aggregated_dimensions = "time lat lon" ;
    tas:aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers" ;
  int fragment_map(j, i) ;
  string fragment_uris(f_time, f_lat, f_lon) ;
  string fragment_identifiers ;
:Conventions = "CF-1.13" ;
data:
  fragment_map = 40, 40, 40, 180, _, _, 360, _, _ ;
  fragment_uris = "big0.nc", "big1.nc", "big2.nc" ;
  fragment_identifiers = "tas" ;
}
"""
    cdl_path = os.path.join(source, "big.cdl")
    with open(cdl_path, "w") as f:
        f.write(cdl)
    subprocess.run(["ncgen", "-4", "-o", os.path.join(source, "big.nca"), cdl_path], check=True)
    os.unlink(cdl_path)


def check_bad_partition_read_on():
    """A truncated partition met by a reader that reads on (its batch made in
    the background first): EIO and a log line naming it, the daemon alive;
    the bytes before it read."""
    with mounted_with_truncated(make_big_aggregation, "big2.nc", 4096) as m:
        done = 0
        try:
            with open(m.path("big.vds"), "rb") as f:
                while f.read(128 << 10):
                    done += 128 << 10
            test_mount.fail("big.vds read whole with a truncated partition")
        except OSError as e:
            check(e.errno == errno.EIO, "big.vds read failed with %s, want EIO" % e)
        check(done > 8 << 20, "big.vds failed after %d bytes, before the batches made ahead" % done)
        check(m.alive(), "ncafs died on a truncated partition met reading on")
        check("big2.nc" in m.log_text(), "log does not name big2.nc:\n" + m.log_text())


def main():
    test_mount.require_fuse()
    source = tempfile.mkdtemp(prefix="ncafs-vdsw-src-")
    try:
        make_types(os.path.join(source, "types.nc"))
        make_fills(os.path.join(source, "fills.nc"))
        make_small_ranks(source)
        make_series(source)
        make_aggregation(source)
        with test_mount.Mount(source, "views=nc,vds,vds_lods=%d" % LODS) as m:
            listing = set(os.listdir(m.mnt))
            for stem in ("types", "image", "four", "series", "agg"):
                check(stem + ".vds" in listing, "no %s.vds in %s" % (stem, sorted(listing)))
            check("types.ds" not in listing, "views=nc,vds shows a .ds view")
            check_concurrent_reads(m.path("types.vds"))
            check_types(m.mnt)
            check_aggregation(m.mnt)
            check_dataset(m.mnt, "image", LODS)
            check_four(m.mnt)
            check_fills(m.mnt)
            series, names = check_dataset(m.mnt, "series", LODS)
            check(sorted(names) == ["count", "level", "time"], "series.vds channels: %s" % names)
            check_round_trip(m.mnt, ["types", "agg", "image", "four"])
            check_export(m.mnt, source, "agg", "agg.nca")
            check_export(m.mnt, source, "types", "types.nc")
            check_export(m.mnt, source, "image", "image.vds", ())
        with test_mount.Mount(source, "views=nc,ds,ncs") as m:
            check("types.vds" not in os.listdir(m.mnt), "a .vds view without vds in views=")
        check_bad_partition()
        check_bad_partition_read_on()
    finally:
        shutil.rmtree(source, ignore_errors=True)
    print("PASS: vds views")
    return 0


if __name__ == "__main__":
    sys.exit(main())
