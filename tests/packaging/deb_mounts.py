#!/usr/bin/python3
"""Mounts through mount(8) with the installed package: mount -t fuse.ncafs
(mount.fuse3 runs ncafs from the default PATH), mount -t ncafs (our
mount.ncafs), and an /etc/fstab line (`mount MOUNTPOINT`). Each time the
virtual file is read with ncdump, then `umount` must unmount it and end the
daemon. The fstab line is always removed again.

usage: deb_mounts.py   (as root, after deb_build_install.py)
"""

import os
import shutil
import time

from packaging_common import (TestFailure, check_ncafs_mount, force_unmount, log, main, mount_entry,
                              require_file, require_root, run, temporary_tree, wait_until)

FSTAB = "/etc/fstab"


def daemons_serving(source):
    """PIDs of ncafs processes whose command line names SOURCE (read from
    /proc: only looked at, never signalled)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
        except OSError:
            continue
        if words and os.path.basename(words[0].decode(errors="replace")) == "ncafs" \
                and source.encode() in words:
            pids.append(int(entry))
    return pids


def unmount_and_check(mountpoint, source):
    run(["umount", mountpoint], timeout=60)
    if mount_entry(mountpoint) is not None:
        raise TestFailure(f"umount {mountpoint} returned, but it is still mounted")
    wait_until(lambda: not daemons_serving(source), 20, f"the ncafs daemon of {source} to exit after umount")
    log(f"umount {mountpoint}: unmounted, daemon gone")


def mount_with_type(fstype, options, root, source, mountpoint):
    args = ["mount", "-t", fstype, source, mountpoint]
    if options:
        args += ["-o", options]
    try:
        run(args, timeout=60)
        check_ncafs_mount(mountpoint, source)
        unmount_and_check(mountpoint, source)
    finally:
        force_unmount(mountpoint)


MARKER = "# ncafs packaging test "


def remove_stale_fstab_lines():
    """Drops the lines a killed earlier run may have left: each marker line
    and the line after it."""
    lines = open(FSTAB).read().splitlines(keepends=True)
    kept, skip_next = [], False
    for l in lines:
        if l.startswith(MARKER):
            skip_next = True
        elif skip_next:
            skip_next = False
        else:
            kept.append(l)
    if kept != lines:
        log(f"removing {len(lines) - len(kept)} stale lines of an earlier run from {FSTAB}")
        with open(FSTAB, "w") as f:
            f.writelines(kept)


def mount_from_fstab(root, source, mountpoint):
    remove_stale_fstab_lines()
    marker = f"{MARKER}{os.getpid()} {root}"
    line = f"{source} {mountpoint} fuse.ncafs ro,allow_other,nofail 0 0"
    original = open(FSTAB).read()
    backup = os.path.join(root, "fstab.orig")
    shutil.copy2(FSTAB, backup)
    try:
        with open(FSTAB, "a") as f:
            f.write(("" if original.endswith("\n") or not original else "\n") + marker + "\n" + line + "\n")
        log(f"added to {FSTAB}: {line}")
        run(["mount", mountpoint], timeout=60)
        check_ncafs_mount(mountpoint, source)
        unmount_and_check(mountpoint, source)
    finally:
        force_unmount(mountpoint)
        # Remove exactly our two lines, whatever else changed meanwhile.
        current = open(FSTAB).read().splitlines(keepends=True)
        kept = [l for l in current if l.rstrip("\n") not in (marker, line)]
        with open(FSTAB, "w") as f:
            f.writelines(kept)
        if open(FSTAB).read() != original:
            shutil.copy2(backup, FSTAB)
        if open(FSTAB).read() != original:
            raise TestFailure(f"could not restore {FSTAB}; the original is in {backup}")
        log(f"{FSTAB} restored")


def check(argv):
    require_root()
    require_file("/usr/bin/ncafs", "the installed ncafs program (run deb_build_install.py first)")
    require_file("/sbin/mount.ncafs", "the mount helper mount.ncafs")
    if os.path.exists("/usr/local/bin/ncafs"):
        log("WARNING: /usr/local/bin/ncafs exists and comes first on the search path mount.fuse3 "
            "uses: the fuse.ncafs cases below run it, not the package's /usr/bin/ncafs")
    cases = [
        ("mount -t fuse.ncafs -o ro,allow_other",
         lambda r, s, m: mount_with_type("fuse.ncafs", "ro,allow_other", r, s, m)),
        # Without ro, mount(8) passes "rw" to the helper: ncafs must still mount (read-only).
        ("mount -t fuse.ncafs -o allow_other (mount(8) adds rw)",
         lambda r, s, m: mount_with_type("fuse.ncafs", "allow_other", r, s, m)),
        ("mount -t ncafs (mount.ncafs)",
         lambda r, s, m: mount_with_type("ncafs", "allow_other,cdf_version=2", r, s, m)),
        ("fstab: SOURCE MNT fuse.ncafs ro,allow_other,nofail 0 0",
         mount_from_fstab),
    ]
    failures = []
    for name, case in cases:
        log(f"--- {name}")
        root, source, mountpoint = temporary_tree("ncafs-pkg-mount-")
        try:
            case(root, source, mountpoint)
            log(f"ok: {name}")
        except TestFailure as failure:
            log(f"FAILED: {name}: {failure}")
            failures.append(f"{name}: {failure}")
        finally:
            force_unmount(mountpoint)
            time.sleep(0.1)
            if mount_entry(mountpoint) is None:
                shutil.rmtree(root, ignore_errors=True)
    if failures:
        raise TestFailure(f"{len(failures)} of {len(cases)} mount cases failed:\n" + "\n".join(failures))


main(check)
