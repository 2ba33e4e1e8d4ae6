#!/usr/bin/python3
"""One resolver of view names: whatever the mount lists, the commands accept.

Run as: test_view_names.py CASE   (CASE: export, inspect)
  export  for every name a mount with lods=1,lod_min_size=0 lists (twins of
          a netCDF-4 NAME.nc4, the classic view of a netCDF-4 NAME.nc, LOD
          views, the NAME.nc of an aggregation NAME.nca, the partitions'
          twins), `ncafs export SOURCE/NAME` with the same options gives the
          bytes `cat MNT/NAME` gives (compared byte for byte)
  inspect `ncafs inspect` and `ncafs check` accept the view name tas.nc of
          the aggregation tas.nca, and report what they report for tas.nca
Environment: NCAFS_BIN, NCAFS_SKIP_FUSE=1 (exit 77 where /dev/fuse is unusable).

The datasets are written by netCDF4-python; the reference bytes are those
the kernel returns for the mounted name.
"""
import filecmp
import os
import subprocess
import sys

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_aggregations  # noqa: E402
from test_mount import NCAFS, Mount, check, run_cases  # noqa: E402

OPTIONS = "lods=1,lod_min_size=0"


def grid(path, fmt):
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("y", 6)
        ds.createDimension("x", 8)
        v = ds.createVariable("t", "f4", ("y", "x"))
        v[...] = np.arange(48, dtype="f4").reshape(6, 8) * 0.5


def collection(src):
    """obs.nc4 (netCDF-4), obs4.nc (netCDF-4 under a .nc name), cls.nc
    (classic), tas.nca (an NCA aggregation of two partitions)."""
    os.makedirs(src)
    grid(os.path.join(src, "obs.nc4"), "NETCDF4")
    grid(os.path.join(src, "obs4.nc"), "NETCDF4")
    grid(os.path.join(src, "cls.nc"), "NETCDF3_CLASSIC")
    make_aggregations.write_aggregation(src, "tas", ["time", "lat", "lon"], {"time": 4, "lat": 6, "lon": 8},
                                        {"time": [2, 2], "lat": [6], "lon": [8]})


def case_export(work):
    src = os.path.join(work, "src")
    collection(src)
    with Mount(src, OPTIONS) as m:
        names = sorted(os.listdir(m.mnt))
        for must in ("obs.nc", "obs.lod1.vds", "obs4.classic.nc", "tas.nc", "tas.lod1.nc", "tas.lod1.vds",
                     "tas.ncs", "cls.lod1.ds"):
            check(must in names, "%s is not listed: %s" % (must, names))
        for name in names:
            if os.path.isdir(m.path(name)):  # a folder view (NAME.zarr): the mount's alone
                continue
            out = os.path.join(work, "out")
            r = subprocess.run([NCAFS, "export", os.path.join(src, name), "-o", out, "-o", OPTIONS],
                               capture_output=True, text=True)
            check(r.returncode == 0, "export %s: exit %d: %s" % (name, r.returncode, r.stderr))
            check(filecmp.cmp(out, m.path(name), shallow=False),
                  "export %s differs from the mount's bytes (%d vs %d bytes)" %
                  (name, os.path.getsize(out), os.path.getsize(m.path(name))))
            os.unlink(out)
    print("%d names exported as the mount serves them" % len(names))


def case_inspect(work):
    src = os.path.join(work, "src")
    collection(src)
    for command in ("inspect", "check"):
        by_file = subprocess.run([NCAFS, command, os.path.join(src, "tas.nca")], capture_output=True, text=True)
        by_view = subprocess.run([NCAFS, command, os.path.join(src, "tas.nc")], capture_output=True, text=True)
        check(by_file.returncode == 0, "%s tas.nca: exit %d: %s" % (command, by_file.returncode, by_file.stderr))
        check(by_view.returncode == 0, "%s tas.nc: exit %d: %s" % (command, by_view.returncode, by_view.stderr))
        check(by_view.stdout == by_file.stdout,
              "%s tas.nc reports otherwise than for tas.nca:\n%s\n---\n%s" % (command, by_view.stdout, by_file.stdout))
        expected = "tas" if command == "inspect" else "ok"
        check(expected in by_view.stdout, "%s tas.nc says no %s:\n%s" % (command, expected, by_view.stdout))
    # A name that stands for no file still fails, naming it.
    r = subprocess.run([NCAFS, "inspect", os.path.join(src, "nothing.nc")], capture_output=True, text=True)
    check(r.returncode != 0 and "nothing.nc" in r.stderr, "inspect nothing.nc: %d %s" % (r.returncode, r.stderr))


CASES = {"export": case_export, "inspect": case_inspect}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-view-names-"))
