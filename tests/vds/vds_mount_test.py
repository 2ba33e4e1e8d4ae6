#!/usr/bin/python3
"""OpenVDS fixtures (tests/data/vds, written by OpenVDS) in a real ncafs mount.

Each NAME.vds in SOURCE must appear as NAME.nc, NAME.ds and NAME.ncs. The .nc
view is read with netCDF4-python (netcdf-c): every LOD variable must give the
sha1s of the fixtures' README (raw codes, and the README's dequantisation
float32(add_offset) + float32(scale_factor) * float32(q), _FillValue -> NaN,
computed here with numpy from the attributes the view carries).
Environment: NCAFS_BIN, NCAFS_SOURCE_DIR; exit 77 = skipped (NCAFS_SKIP_FUSE=1
and /dev/fuse unusable).
"""
import hashlib
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import test_mount  # noqa: E402  (Mount, fail, check, fuse_usable)

import netCDF4  # noqa: E402

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


def main():
    reason = test_mount.fuse_usable()
    if reason:
        if os.environ.get("NCAFS_SKIP_FUSE") == "1":
            print("SKIPPED: " + reason)
            return test_mount.SKIP
        test_mount.fail(reason)
    data = os.path.join(os.environ.get("NCAFS_SOURCE_DIR", os.path.join(HERE, "..", "..")), "tests", "data", "vds")
    source = tempfile.mkdtemp(prefix="ncafs-vds-src-")
    try:
        for name in EXPECTED:
            shutil.copy(os.path.join(data, name + ".vds"), source)
        with test_mount.Mount(source) as m:
            listing = set(os.listdir(m.mnt))
            for name in EXPECTED:
                for view in ("nc", "ds", "ncs"):
                    test_mount.check("%s.%s" % (name, view) in listing, "no %s.%s in %s" % (name, view, sorted(listing)))
                    test_mount.check(os.path.getsize(m.path("%s.%s" % (name, view))) > 0, "%s.%s is empty" % (name, view))
                check_file(m.path(name + ".nc"), name)
    finally:
        shutil.rmtree(source, ignore_errors=True)
    print("PASS: vds mount")
    return 0


if __name__ == "__main__":
    sys.exit(main())
