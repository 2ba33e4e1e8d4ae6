#!/usr/bin/python3
"""A listing's pre-checks never follow a folder swapped for a symlink, through a real FUSE mount.

Run as: test_listing_race.py swap
Environment: NCAFS_BIN (the ncafs executable, set by CMake), NCAFS_SKIP_FUSE=1
to report "skipped" (exit 77) where /dev/fuse is unusable.

A folder of *.nc files inside SOURCE is swapped, again and again, for a
symlink to a folder outside SOURCE holding files of the same names, while
the mount lists it (the files are touched each round, so every listing
classifies them anew: sniff, header pre-check, views). inotify watches the
outside folder: any open or read of it by the daemon is a failure. The
watch itself is checked first with an open of our own.
"""
import ctypes
import ctypes.util
import errno
import os
import struct
import sys
import threading
import time

import netCDF4

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from test_mount import Mount, check, run_cases  # noqa: E402

IN_ACCESS, IN_OPEN, IN_NONBLOCK = 0x1, 0x20, 0o4000
FILES = 50


class Watch:
    """inotify IN_OPEN | IN_ACCESS on one folder (its files and itself)."""

    def __init__(self, folder):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = libc.inotify_init1(IN_NONBLOCK)
        check(self.fd >= 0, "inotify_init1: %s" % os.strerror(ctypes.get_errno()))
        wd = libc.inotify_add_watch(self.fd, folder.encode(), IN_OPEN | IN_ACCESS)
        check(wd >= 0, "inotify_add_watch: %s" % os.strerror(ctypes.get_errno()))

    def events(self):
        """[(mask, name)] seen since the last call."""
        out = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            at = 0
            while at + 16 <= len(data):
                _, mask, _, length = struct.unpack_from("iIII", data, at)
                name = data[at + 16:at + 16 + length].rstrip(b"\0").decode(errors="replace")
                out.append((mask, name))
                at += 16 + length


def classic_with_marker(path):
    """A small classic file whose header names an aggregation attribute (so
    the listing pre-checks it, then finds it is no aggregation it can read)."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", 3)
        v = ds.createVariable("v", "f4", ("x",))
        v[:] = [1, 2, 3]
        v.history = "no aggregation"


def flip(src, outside, stop, rounds):
    """d: a folder, then a symlink to outside, then the folder again, touched."""
    d, real = os.path.join(src, "d"), os.path.join(src, "d.real")
    names = sorted(os.listdir(d))
    while not stop.is_set():
        os.rename(d, real)
        os.symlink(outside, d)
        time.sleep(0.002)
        os.unlink(d)
        os.rename(real, d)
        now = time.time() + rounds[0]
        for n in names:  # another identity: the next listing classifies anew
            os.utime(os.path.join(d, n), (now, now))
        rounds[0] += 1
        time.sleep(0.005)  # mostly a folder: listings start, and are swapped under


def case_swap(work):
    src, outside = os.path.join(work, "src"), os.path.join(work, "outside")
    os.makedirs(os.path.join(src, "d"))
    os.makedirs(outside)
    for i in range(FILES):
        classic_with_marker(os.path.join(src, "d", "p%03d.nc" % i))
        classic_with_marker(os.path.join(outside, "p%03d.nc" % i))
    classic_with_marker(os.path.join(outside, "outside_only.nc"))
    watch = Watch(outside)
    with open(os.path.join(outside, "outside_only.nc"), "rb"):  # the watch sees opens
        pass
    check(any(mask & IN_OPEN and name == "outside_only.nc" for mask, name in watch.events()),
          "inotify did not report an open of our own: the watch cannot tell")
    listed, refused = 0, {}
    stop, rounds = threading.Event(), [0]
    with Mount(src, "cache_timeout=0") as m:
        flipper = threading.Thread(target=flip, args=(src, outside, stop, rounds))
        flipper.start()
        try:
            # 10 s, or longer (up to 60 s) until 20 listings went through.
            start = time.time()
            while time.time() < start + 10 or (listed < 20 and time.time() < start + 60):
                try:
                    names = os.listdir(m.path("d"))
                except OSError as e:
                    check(e.errno in (errno.ENOENT, errno.ELOOP, errno.EXDEV, errno.EACCES, errno.ENOTDIR,
                                      errno.ESTALE), "listing failed with %s" % e)
                    refused[errno.errorcode[e.errno]] = refused.get(errno.errorcode[e.errno], 0) + 1
                    time.sleep(0.002)  # leave the CPU to the daemon's listings
                    continue
                check("outside_only.nc" not in names, "a name from outside SOURCE was listed")
                listed += 1
        finally:
            stop.set()
            flipper.join()
        check(m.alive(), "ncafs died during the swapping")
    seen = watch.events()
    print("listings: %d, refused while swapped: %s, swaps: %d, opens outside: %d" %
          (listed, refused, rounds[0], len(seen)))
    check(not seen, "the daemon opened or read files outside SOURCE: %s" % seen[:10])
    check(listed >= 5 and rounds[0] >= 5, "the race was not exercised (%d listings, %d swaps)" % (listed, rounds[0]))


if __name__ == "__main__":
    sys.exit(run_cases({"swap": case_swap}, "ncafs-listing-race-"))
