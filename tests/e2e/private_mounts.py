#!/usr/bin/python3
"""Runs a command in a mount namespace of its own, without the FUSE mounts of
the machine's namespace.

usage: private_mounts.py COMMAND [ARG...]    (as root; execs COMMAND)

A new mount namespace starts as a copy of every mount there is, the FUSE
mounts of tests running beside included. A copy that outlives the test that
made the mount keeps that mount's connection alive: its `fusermount3 -u`
succeeds, but the daemon goes on serving the copy and does not exit until
the namespace ends (a container booted by systemd-nspawn holds them for its
whole life, detached where nobody can see them). So this enters a private
namespace (`unshare -m --propagation private`, re-running itself), detaches
every FUSE mount there, and only then execs COMMAND: what COMMAND's
namespace and those cloned from it hold is only what they mount themselves.
"""
import ctypes
import os
import sys

MNT_DETACH = 2
MARK = "NCAFS_PRIVATE_MOUNTS"


def unescape(field):
    """A mountinfo path: space, tab, newline and backslash are octal escapes."""
    return field.encode().decode("unicode_escape").encode("latin-1").decode()


def fuse_mount_points():
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            before, _, after = line.partition(" - ")
            fstype = after.split(" ", 1)[0]
            if fstype == "fuse" or fstype == "fuseblk" or fstype.startswith("fuse."):
                points.append(unescape(before.split(" ")[4]))
    return points


def detach_fuse_mounts():
    libc = ctypes.CDLL(None, use_errno=True)
    for point in sorted(fuse_mount_points(), key=len, reverse=True):
        if libc.umount2(point.encode(), MNT_DETACH) != 0 and ctypes.get_errno() not in (2, 22):  # ENOENT, EINVAL
            sys.exit("private_mounts.py: cannot detach %s: %s" % (point, os.strerror(ctypes.get_errno())))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if os.environ.get(MARK) != str(os.getpid()):
        # unshare execs python in place, so this process keeps its PID (and cgroup).
        os.environ[MARK] = str(os.getpid())
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable, *sys.argv])
    del os.environ[MARK]
    detach_fuse_mounts()
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
