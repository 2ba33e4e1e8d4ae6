#!/usr/bin/python3
"""OpenVDS volumes in the object-store directory form in a real ncafs mount.

Each OpenVDS-written fixture (tests/data/vds) is rewritten as a folder
NAME.vds/ (VolumeDataLayout, LayerStatus, <layer>/<chunk>,
<layer>/ChunkMetadata/<page>, by vds_directory_form.py); the mount must show
NAME.nc, NAME.ds and NAME.ncs and no folder NAME.vds, and the .nc view read
with netCDF4-python must give the README's sha1s of every LOD. A folder
without VolumeDataLayout, or not named *.vds, stays a folder. Members are
opened without following symlinks: a chunk object or a hash page replaced by
a symlink (to the right bytes, outside SOURCE or inside it) makes reads of
the view fail (EIO) with a log line naming the member, never serve the
target's bytes.
Environment: NCAFS_BIN, NCAFS_SOURCE_DIR; exit 77 = skipped (NCAFS_SKIP_FUSE=1
and /dev/fuse unusable).
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
import test_mount  # noqa: E402  (Mount, fail, check, fuse_usable)

import netCDF4  # noqa: E402

import vds_directory_form  # noqa: E402
import vds_mount_test  # noqa: E402  (EXPECTED sha1s of the README, check_file)

check = test_mount.check


def expect_eio(path, variable):
    """Opening or reading `variable` of the .nc view fails (EIO at the FUSE boundary)."""
    try:
        with netCDF4.Dataset(path) as ds:
            ds.variables[variable][...]
    except (OSError, RuntimeError) as e:
        return str(e)
    test_mount.fail("%s: %s read although a member is a symlink" % (path, variable))


def first_chunk(folder, layer):
    return min((n for n in os.listdir(os.path.join(folder, layer)) if n.isdigit()), key=int)


def symlink_cases(source, outside):
    """Two volumes of r32_zip_brick64_margin0 with one member swapped for a symlink to its own bytes."""
    for case, member in (("link_chunk", lambda d: os.path.join("Dimensions_012LOD0", first_chunk(d, "Dimensions_012LOD0"))),
                         ("link_page", lambda d: os.path.join("Dimensions_012LOD0", "ChunkMetadata", "0"))):
        folder = os.path.join(source, case + ".vds")
        vds_directory_form.container_to_directory(os.path.join(DATA, "r32_zip_brick64_margin0.vds"), folder)
        target = member(folder)
        kept = os.path.join(outside if case == "link_chunk" else source, case + ".member")
        shutil.move(os.path.join(folder, target), kept)
        os.symlink(kept, os.path.join(folder, target))


def check_symlinks(m):
    # The view's blocks hold header and data together: the open or the read fails.
    for case in ("link_chunk", "link_page"):
        expect_eio(m.path(case + ".nc"), "Amplitude")
    log = m.log_text()
    for member in ("link_chunk.vds/Dimensions_012LOD0/", "link_page.vds/Dimensions_012LOD0/ChunkMetadata/0"):
        check(member in log and "symlink" in log, "the log does not name the symlinked member %s:\n%s" % (member, log[-3000:]))


def main():
    test_mount.require_fuse()
    source = tempfile.mkdtemp(prefix="ncafs-vdsdir-src-")
    outside = tempfile.mkdtemp(prefix="ncafs-vdsdir-outside-")
    try:
        for name in vds_mount_test.EXPECTED:
            vds_directory_form.container_to_directory(os.path.join(DATA, name + ".vds"), os.path.join(source, name + ".vds"))
        os.makedirs(os.path.join(source, "not_a_volume.vds"))  # no VolumeDataLayout: a folder
        vds_directory_form.container_to_directory(os.path.join(DATA, "r64_2d_none.vds"), os.path.join(source, "unnamed"))
        symlink_cases(source, outside)
        with test_mount.Mount(source) as m:
            listing = set(os.listdir(m.mnt))
            for name in vds_mount_test.EXPECTED:
                check(name + ".vds" not in listing, "%s.vds is listed as a folder: %s" % (name, sorted(listing)))
                check(not os.path.exists(m.path(name + ".vds")), "%s.vds can be looked up" % name)
                for view in ("nc", "ds", "ncs"):
                    check("%s.%s" % (name, view) in listing, "no %s.%s in %s" % (name, view, sorted(listing)))
                    with open(m.path("%s.%s" % (name, view)), "rb") as f:  # every byte readable (no EIO)
                        size = len(f.read())
                    check(size == os.path.getsize(m.path("%s.%s" % (name, view))) and size > 0,
                          "%s.%s: read %d bytes" % (name, view, size))
                vds_mount_test.check_file(m.path(name + ".nc"), name)
            check(os.path.isdir(m.path("not_a_volume.vds")) and os.path.isdir(m.path("unnamed")),
                  "a folder that is not NAME.vds with a VolumeDataLayout is not shown as a folder")
            check("unnamed.nc" not in listing and "not_a_volume.nc" not in listing, "views of a non-volume folder")
            check_symlinks(m)
    finally:
        shutil.rmtree(source, ignore_errors=True)
        shutil.rmtree(outside, ignore_errors=True)
    print("PASS: vds directory mount")
    return 0


DATA = os.path.join(os.environ.get("NCAFS_SOURCE_DIR", os.path.join(HERE, "..", "..")), "tests", "data", "vds")

if __name__ == "__main__":
    sys.exit(main())
