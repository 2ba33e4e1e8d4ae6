#!/usr/bin/python3
"""OpenVDS fixtures (tests/data/vds, written by OpenVDS) in a real ncafs mount.

Each NAME.vds in SOURCE must appear as NAME.nc, NAME.ds and NAME.ncs. The .nc
view is read with netCDF4-python (netcdf-c): every LOD variable must give the
sha1s of the fixtures' README (raw codes, and the README's dequantisation
float32(add_offset) + float32(scale_factor) * float32(q), _FillValue -> NaN,
computed here with numpy from the attributes the view carries). Containers
made by make_vds.py (an independent writer from the notes) cover U8 with
NoValue/constant chunks, R32 and U32 channels, 1-bit tiles, metadata and a
4-D volume whose LODs are decimated along its fourth (outside-the-group)
dimension too, as OpenVDS reads them.
Environment: NCAFS_BIN, NCAFS_SOURCE_DIR; exit 77 = skipped (NCAFS_SKIP_FUSE=1
and /dev/fuse unusable).
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
import test_mount  # noqa: E402  (Mount, fail, check, fuse_usable)

import netCDF4  # noqa: E402

import make_vds  # noqa: E402
import vds_decode  # noqa: E402

# From tests/data/vds/README.md: per file, per LOD: shape, raw sha1, f64 sha1.
EXPECTED = {
    "r32_zip_const_novalue": [
        ((50, 60, 70), "b1093d046684e4f9348078980613cc3dd2aa1c46", "d7d013d8d93b5be57f2a88239d0081745be3d1d6"),
        ((25, 30, 35), "060ce86a41a77b9f87675d5c287ee583bc39ac7b", "6ae25b0f6006e43a59ea65e8b5fd0aa6996a22bf"),
        ((13, 15, 18), "b3d49f0be5a192235f4e1e9d0ec694791a6200c9", "9e935d34ec3a4c9f4b40184c08dac411e8e71246")],
    "u16_rle_quantized": [
        ((40, 48, 64), "c011b7ff833b3777c28882a675d209a72d43a20c", "38961f196aa24bd45cb49a86161d84fadb56fdff"),
        ((20, 24, 32), "e71e67a0a9c275419d02c1b0732a0ade8f3ce68c", "88c1a389d68f16df31b7a57e46710ca750237682"),
        ((10, 12, 16), "ea09237d953758b9cb4bf67a3eb08eba189703ad", "a99682f9f2fafed10356176b048ff425dc679a73")],
    "r64_2d_none": [
        ((150, 200), "bd82f2f71f36e2a2e85cf802a1635ed2a6e0eb48", "bd82f2f71f36e2a2e85cf802a1635ed2a6e0eb48"),
        ((75, 100), "a5867bb062a3bea191870003d0667b2b6246b4be", "a5867bb062a3bea191870003d0667b2b6246b4be"),
        ((38, 50), "08143c6cddef8fcf343aff66ed4be3fb676da521", "08143c6cddef8fcf343aff66ed4be3fb676da521")],
    "r32_zip_brick64_margin0": [
        ((40, 70, 130), "a9f5ab4294069b942e5657d4e27e25ea4fbff71b", "ac6385d559cb9395c579542976bdad4ee8d52745"),
        ((20, 35, 65), "0432a70710de1704e19e408db51234ac6f1fdc93", "02b9a85bade34eb8bebdbca36cd6d916ab371976")],
}


def sha1(a):
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


def readme_f64(var, raw):
    """The README's f64 array from the raw values and the view's attributes."""
    attrs = var.ncattrs()
    if "scale_factor" in attrs:
        v = np.float32(var.getncattr("add_offset")) + np.float32(var.getncattr("scale_factor")) * raw.astype(np.float32)
        out = v.astype("<f8")
    else:
        out = raw.astype("<f8")
    if "_FillValue" in attrs:
        out[raw == var.getncattr("_FillValue")] = np.frombuffer(np.uint64(0x7ff8000000000000).tobytes(), "<f8")[0]
    return out


def check_file(nc_path, name):
    with netCDF4.Dataset(nc_path) as ds:
        ds.set_auto_maskandscale(False)
        for lod, (shape, raw_sha1, f64_sha1) in enumerate(EXPECTED[name]):
            vname = "Amplitude" if lod == 0 else "Amplitude_lod%d" % lod
            test_mount.check(vname in ds.variables, "%s: no variable %s" % (nc_path, vname))
            var = ds.variables[vname]
            raw = var[...]
            test_mount.check(raw.shape == shape, "%s %s: shape %s, want %s" % (nc_path, vname, raw.shape, shape))
            got = sha1(raw.astype(raw.dtype.newbyteorder("<")))
            test_mount.check(got == raw_sha1, "%s %s: raw sha1 %s, want %s" % (nc_path, vname, got, raw_sha1))
            got = sha1(readme_f64(var, raw))
            test_mount.check(got == f64_sha1, "%s %s: f64 sha1 %s, want %s" % (nc_path, vname, got, f64_sha1))
        lods = len(EXPECTED[name])
        test_mount.check("Amplitude_lod%d" % lods not in ds.variables, "%s: a LOD beyond the stored ones" % nc_path)


def axis(name, n, unit, lo, hi):
    return {"name": name, "numSamples": n, "unit": unit, "coordinateMin": lo, "coordinateMax": hi}


def channel(name, fmt, unit="", use_no_value=False, no_value=0.0, scale=1.0, offset=0.0):
    return {"name": name, "format": "Format_" + fmt, "components": "Components_1", "unit": unit,
            "channelMapping": "Direct", "mappedValues": 1, "useNoValue": use_no_value, "noValue": no_value,
            "integerScale": scale, "integerOffset": offset, "valueRange": [0.0, 1.0], "discrete": False,
            "renderable": True, "allowLossyCompression": False}


def descriptor(brick, margin, mult, lods):
    return {"brickSize": "BrickSize_%d" % brick, "negativeMargin": margin, "positiveMargin": margin,
            "brickSize2DMultiplier": mult, "lodLevels": "LODLevels_%s" % (lods if lods else "None"),
            "create2DLODs": False, "forceFullResolutionDimension": False, "fullResolutionDimension": -1}


def generate_u8(path):
    """3-D U8 with useNoValue (a NoValue chunk, constant chunks), a second R32 channel, metadata."""
    i2, i1, i0 = np.meshgrid(np.arange(30), np.arange(40), np.arange(90), indexing="ij")
    codes = ((i0 + 3 * i1 + 7 * i2) % 255).astype(np.uint8)
    # Sample chunks (stride 28, margins 2/2): [0,32) [28,60) [56,88) [84,90)
    codes[:, :, 56:88] = 77   # chunks (2,*,0): constant 28.5 = -10 + 0.5 * 77 in the hash
    codes[:, :, 0:32] = 255   # chunks (0,*,0): entirely NoValue
    quality = (i0 * 0.5 - i2).astype(np.float32)
    count = (i0 * 40000000 + i1 * 1000 + i2 + 7).astype(np.uint32)  # above 2^24: not float32-exact

    def u8_constant(block):
        if (block == 255).all():
            return "novalue"
        return float(np.float32(-10) + np.float32(0.5) * np.float32(block.flat[0])) if (block == block.flat[0]).all() else None

    layout = {"layoutDescriptor": descriptor(32, 2, 4, 1),
              "axisDescriptors": [axis("Sample", 90, "ms", 0, 356), axis("Crossline", 40, "", 1, 40),
                                  axis("Inline", 30, "", 101, 130)],
              "channelDescriptors": [channel("Amplitude", "U8", "Pa", True, 255.0, 0.5, -10.0),
                                     channel("Quality", "R32", "1"), channel("Count", "U32")],
              "metadata": [{"category": "SurveyCoordinateSystem", "name": "Origin", "type": "DoubleVector2",
                            "value": [1000.5, 2000.25]},
                           {"category": "Test", "name": "Label", "type": "String", "value": "hello"},
                           {"category": "Test", "name": "Count", "type": "Int", "value": 42}]}
    make_vds.write_vds(path, layout, [(layout["channelDescriptors"][0], codes, [0, 1, 2], "Zip", u8_constant),
                                      (layout["channelDescriptors"][1], quality, [0, 1, 2], "None", lambda b: None),
                                      (layout["channelDescriptors"][2], count, [0, 1, 2], "Zip", lambda b: None)])
    return codes, quality, count


def generate_bits(path):
    """2-D 1-bit channel in 64-sample tiles (brick 32, margins 0, multiplier 2)."""
    i1, i0 = np.meshgrid(np.arange(45), np.arange(70), indexing="ij")
    bits = ((i0 * i1) % 3 == 0).astype(np.uint8)
    layout = {"layoutDescriptor": descriptor(32, 0, 2, 0),
              "axisDescriptors": [axis("Sample", 70, "ms", 0, 69), axis("Trace", 45, "", 1, 45)],
              "channelDescriptors": [channel("Flag", "1Bit")], "metadata": []}
    make_vds.write_vds(path, layout, [(layout["channelDescriptors"][0], bits, [0, 1], "None", lambda b: None)])
    return bits


def check_generated(mnt, codes, quality, count, bits):
    with netCDF4.Dataset(os.path.join(mnt, "gen_u8.nc")) as ds:
        ds.set_auto_maskandscale(False)
        amp = ds.variables["Amplitude"]
        test_mount.check(amp.dimensions == ("Inline", "Crossline", "Sample"), "dims %s" % (amp.dimensions,))
        test_mount.check(amp.dtype == np.uint8 and np.array_equal(amp[...], codes), "U8 codes differ")
        test_mount.check(amp.getncattr("_FillValue") == 255 and amp.getncattr("scale_factor") == np.float32(0.5)
                         and amp.getncattr("add_offset") == -10 and amp.getncattr("units") == "Pa", "U8 attributes")
        test_mount.check(np.array_equal(ds.variables["Amplitude_lod1"][...], codes[::2, ::2, ::2]), "U8 LOD1 differs")
        test_mount.check(np.array_equal(ds.variables["Quality"][...], quality), "R32 second channel differs")
        test_mount.check(np.array_equal(ds.variables["Quality_lod1"][...], quality[::2, ::2, ::2]), "R32 LOD1 differs")
        test_mount.check(ds.variables["Count"].dtype == np.uint32 and np.array_equal(ds.variables["Count"][...], count),
                         "U32 channel differs")
        test_mount.check(np.allclose(ds.variables["Sample"][...], np.arange(90) * 4.0), "Sample coordinates")
        test_mount.check(np.allclose(ds.variables["Inline_lod1"][...], 101 + 2 * np.arange(15)), "Inline_lod1 coordinates")
        test_mount.check(list(ds.getncattr("SurveyCoordinateSystem_Origin")) == [1000.5, 2000.25]
                         and ds.getncattr("Test_Label") == "hello" and ds.getncattr("Test_Count") == 42,
                         "metadata attributes: %s" % ds.ncattrs())
    with netCDF4.Dataset(os.path.join(mnt, "gen_u8.nc")) as ds:  # netCDF4-python's own unpacking
        v = ds.variables["Amplitude"][...]
        want = np.ma.masked_equal(codes, 255) * np.float32(0.5) + np.float32(-10)
        test_mount.check(np.array_equal(v.mask, codes == 255) and np.allclose(v.filled(0), want.filled(0)),
                         "unpacked U8 values differ")
    with netCDF4.Dataset(os.path.join(mnt, "gen_bits.nc")) as ds:
        flag = ds.variables["Flag"]
        test_mount.check(flag.dimensions == ("Trace", "Sample") and np.array_equal(flag[...], bits), "1-bit values differ")


def generate_four(path):
    """4-D R32 (Offset x Inline x Crossline x Sample = 5x30x36x40), group 012,
    bricks of 64 without margins, 2 LODs: 5 chunks per level (one per Offset
    sample), each LOD chunk the 3-D decimation of its own Offset slice, as
    OpenVDS writes them. Values: the fixtures' `index` formula."""
    i3, i2, i1, i0 = np.meshgrid(np.arange(5), np.arange(30), np.arange(36), np.arange(40), indexing="ij")
    values = (i0 + 256 * i1 + 65536 * i2 + 16777216 * i3).astype(np.float32)
    chan = channel("Amplitude", "R32")
    layout = {"layoutDescriptor": descriptor(64, 0, 4, 2), "metadata": [], "channelDescriptors": [chan],
              "axisDescriptors": [axis("Sample", 40, "ms", 0, 156), axis("Crossline", 36, "", 1, 36),
                                  axis("Inline", 30, "", 1, 30), axis("Offset", 5, "m", 100, 500)]}
    make_vds.write_vds(path, layout, [(chan, values, [0, 1, 2], "Zip", lambda b: None)])
    return values


def check_four(mnt, source, values):
    """LOD n of the 4-D volume as OpenVDS reads it: [3, 15, 18, 20] and
    [2, 8, 9, 10], every 2**n-th sample of every dimension, Offset too (its
    chunks stay one per LOD0 sample): through the mount and by vds_decode."""
    vds = vds_decode.Vds(os.path.join(source, "gen_four.vds"))
    with netCDF4.Dataset(os.path.join(mnt, "gen_four.nc")) as ds:
        for lod, shape in enumerate([(5, 30, 36, 40), (3, 15, 18, 20), (2, 8, 9, 10)]):
            step = slice(None, None, 1 << lod)
            want = values[step, step, step, step]
            var = ds.variables["Amplitude" if lod == 0 else "Amplitude_lod%d" % lod]
            got = np.asarray(var[...])
            test_mount.check(got.shape == shape and want.shape == shape, "4-D LOD%d: shape %s" % (lod, got.shape))
            test_mount.check(np.array_equal(got, want), "4-D LOD%d: values differ from the decimation" % lod)
            test_mount.check(np.array_equal(vds.read_lod(0, lod), want), "4-D LOD%d: vds_decode differs" % lod)
            test_mount.check(len(vds.layer(0, lod).entries) == 5, "4-D LOD%d: chunks" % lod)
        offsets = ds.variables["Offset_lod2"][...]
        test_mount.check(np.allclose(offsets, [100, 500]), "Offset_lod2 coordinates %s" % offsets)
        test_mount.check(var.dimensions == ("Offset_lod2", "Inline_lod2", "Crossline_lod2", "Sample_lod2"),
                         "4-D LOD2 dimensions %s" % (var.dimensions,))


def generate_partitions(source):
    """Two R32 volumes (Inline x Crossline x Sample = 6x5x40 and 4x5x40) and an
    NCA aggregation of their Amplitude along Inline, one partition declared
    format "vds", one known by its .vds name. Returns the master array,
    computed here from the formula."""
    parts = []
    for k, inlines in enumerate((6, 4)):
        i2, i1, i0 = np.meshgrid(np.arange(inlines), np.arange(5), np.arange(40), indexing="ij")
        values = ((i2 + 6 * k) * 1000 + i1 * 40 + i0).astype(np.float32)
        chan = channel("Amplitude", "R32")
        layout = {"layoutDescriptor": descriptor(32, 0, 4, 0), "metadata": [], "channelDescriptors": [chan],
                  "axisDescriptors": [axis("Sample", 40, "ms", 0, 39), axis("Crossline", 5, "", 0, 4),
                                      axis("Inline", inlines, "", 0, inlines - 1)]}
        make_vds.write_vds(os.path.join(source, "part%d.vds" % k), layout, [(chan, values, [0, 1, 2], "Zip", lambda b: None)])
        parts.append(values)
    partitions = [{"index": [0], "location": [[0, 5], [0, 4], [0, 39]],
                   "subarray": {"file": "part0.vds", "format": "vds", "ncvar": "Amplitude", "shape": [6, 5, 40]}},
                  {"index": [1], "location": [[6, 9], [0, 4], [0, 39]],
                   "subarray": {"file": "part1.vds", "ncvar": "Amplitude", "shape": [4, 5, 40]}}]
    with netCDF4.Dataset(os.path.join(source, "joined.nca"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        for name, n in (("Inline", 10), ("Crossline", 5), ("Sample", 40)):
            ds.createDimension(name, n)
        v = ds.createVariable("Amplitude", "f4", ())
        v.cf_role = "nca_variable"
        v.nca_dimensions = "Inline Crossline Sample"
        v.nca_array = json.dumps({"pmdimensions": ["Inline"], "pmshape": [2], "Partitions": partitions})
    return np.concatenate(parts)


def check_partitions(mnt, master):
    with netCDF4.Dataset(os.path.join(mnt, "joined.nc")) as ds:
        got = ds["Amplitude"][:]
    test_mount.check(got.shape == master.shape and np.array_equal(np.asarray(got), master),
                     "joined.nc: VDS partitions read back other values")


def main():
    test_mount.require_fuse()
    data = os.path.join(os.environ.get("NCAFS_SOURCE_DIR", os.path.join(HERE, "..", "..")), "tests", "data", "vds")
    source = tempfile.mkdtemp(prefix="ncafs-vds-src-")
    try:
        for name in EXPECTED:
            shutil.copy(os.path.join(data, name + ".vds"), source)
        codes, quality, count = generate_u8(os.path.join(source, "gen_u8.vds"))
        bits = generate_bits(os.path.join(source, "gen_bits.vds"))
        four = generate_four(os.path.join(source, "gen_four.vds"))
        master = generate_partitions(source)
        with test_mount.Mount(source) as m:
            check_partitions(m.mnt, master)
            listing = set(os.listdir(m.mnt))
            for name in EXPECTED:
                for view in ("nc", "ds", "ncs"):
                    test_mount.check("%s.%s" % (name, view) in listing, "no %s.%s in %s" % (name, view, sorted(listing)))
                    with open(m.path("%s.%s" % (name, view)), "rb") as f:  # every byte readable (no EIO)
                        size = len(f.read())
                    test_mount.check(size == os.path.getsize(m.path("%s.%s" % (name, view))) and size > 0,
                                     "%s.%s: read %d bytes" % (name, view, size))
                check_file(m.path(name + ".nc"), name)
            check_generated(m.mnt, codes, quality, count, bits)
            check_four(m.mnt, source, four)
    finally:
        shutil.rmtree(source, ignore_errors=True)
    print("PASS: vds mount")
    return 0


if __name__ == "__main__":
    sys.exit(main())
