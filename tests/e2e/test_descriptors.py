#!/usr/bin/python3
"""Open descriptors stay bounded by open_files= however many fragments an
aggregation has, and however many fragments one read spans.

Two collections of classic partitions (CDF-1 bytes written here, checked with
netCDF4-python), each aggregated as CF-1.13 by `ncafs aggregate --files-from`
and as NCA JSON written here:

- fixed: 2,000 partitions in SOURCE whose time dimension has a fixed length;
- records: 20,000 partitions in 100 sub-folders outside SOURCE, reached
  through allow_root=, whose time is UNLIMITED (as in most climate files):
  time and tas are then record variables of the view, interleaved, so every
  few bytes of the view come from another partition.

Under `ulimit -n 256` (set on this process, inherited by the daemon and by
`ncafs export`) with open_files=32 each aggregation is read whole through a
real mount (netCDF4-python, and `cat`), as a point series, and by `ncafs
export`; values are compared with those computed from the inputs, and the
process's /proc/PID/fd is sampled during the reads.

Run as: test_descriptors.py   (NCAFS_BIN: the ncafs executable)
"""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_partitions as tp  # noqa: E402
from test_mount import NCAFS, SKIP, Mount, check, fuse_usable  # noqa: E402

WIDTH = 4              # x length of every partition
FD_LIMIT = 256         # ulimit -n of this process and its children
OPEN_FILES = 32        # the mount's and export's open_files=
# stdio, /dev/fuse, logs, the aggregation file, the catalog's own files: 9
# or 10 were open beside the 32, and a file or two just being opened.
SLACK = 16


class Collection:
    """The partitions of one case and where they lie."""

    def __init__(self, name, partitions, unlimited, folders):
        self.name, self.partitions, self.unlimited, self.folders = name, partitions, unlimited, folders

    def partition_bytes(self, index):
        """CDF-1 bytes of a file with time(time=1) double and tas(time, x) float."""
        tas_values = np.asarray(expected_tas_row(index), dtype=">f4").tobytes()
        return tp.cdf1_bytes([("time", 0 if self.unlimited else 1), ("x", WIDTH)],
                             [("time", [0], tp.NC_DOUBLE, {"units": "days since 2000-01-01"},
                               struct.pack(">d", float(index))),
                              ("tas", [0, 1], tp.NC_FLOAT, {"units": "K"}, tas_values)],
                             numrecs=1 if self.unlimited else 0)


FIXED = Collection("fixed", 2000, unlimited=False, folders=0)
RECORDS = Collection("records", 20000, unlimited=True, folders=100)


def expected_tas_row(index):
    return [index * 10.0 + x + 0.5 for x in range(WIDTH)]


def write_partitions(collection, folder):
    """The partitions in folder (in `folders` sub-folders of it when > 0), in time order."""
    names = []
    per_folder = collection.partitions // max(collection.folders, 1)
    for start in range(0, collection.partitions, per_folder):
        sub = os.path.join(folder, "d%03d" % (start // per_folder)) if collection.folders else folder
        count = min(per_folder, collection.partitions - start)
        names += tp.write_partitions(sub, count, lambda i: collection.partition_bytes(start + i),
                                     "part_%%05d_%d.nc" % start)
    import netCDF4  # the hand-written bytes as netcdf-c reads them
    for i in (0, collection.partitions - 1):
        with netCDF4.Dataset(names[i]) as ds:
            check(ds.dimensions["time"].isunlimited() == collection.unlimited, "partition %d: time unlimited?" % i)
            check(np.array_equal(ds["tas"][...], np.array([expected_tas_row(i)], dtype="f4")),
                  "netCDF4-python reads the generated partition %d differently" % i)
            check(ds["time"][0] == i, "partition %d time" % i)
    return names


def write_nca(folder, names):
    import netCDF4
    partitions = [{"index": [i], "location": [[i, i], [0, WIDTH - 1]],
                   "subarray": {"file": os.path.relpath(n, folder), "ncvar": "tas", "shape": [1, WIDTH]},
                   "format": "netCDF"} for i, n in enumerate(names)]
    path = os.path.join(folder, "nca.nca")
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.createDimension("time", len(names))
        ds.createDimension("x", WIDTH)
        carrier = ds.createVariable("tas", "f4", (), fill_value=False)
        carrier.units = "K"
        carrier.cf_role = "nca_variable"
        carrier.nca_dimensions = "time x"
        carrier.nca_array = json.dumps({"directions": {"time": True, "x": True}, "pmdimensions": ["time"],
                                        "pmshape": [len(names)], "Partitions": partitions})
    return path


class FdSampler:
    """Counts /proc/PID/fd entries every few milliseconds until stopped: the
    most any one of the process and its children held (`ncafs export` works
    in a child confined by the kernel sandbox)."""

    def __init__(self, pid):
        self.pid, self.highest, self.samples = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.highest = max([self.highest, len(os.listdir("/proc/%d/fd" % self.pid))] +
                                   [self._count(c) for c in self._children()])
                self.samples += 1
            except OSError:
                return  # the process ended
            self._stop.wait(0.005)

    def _children(self):
        with open("/proc/%d/task/%d/children" % (self.pid, self.pid)) as f:
            return [int(c) for c in f.read().split()]

    @staticmethod
    def _count(pid):
        try:
            return len(os.listdir("/proc/%d/fd" % pid))
        except OSError:
            return 0  # a child that just ended

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False


def read_variable(path, name, index=Ellipsis):
    """The values of a variable, None when there is none of that name (NCA views have no time)."""
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        if name not in ds.variables:
            return None
        v = ds[name]
        v.set_auto_maskandscale(False)
        return np.array(v[index])


def check_values(collection, path, what):
    """tas and time of path against the values the partitions were written with."""
    n = collection.partitions
    want = np.array([expected_tas_row(i) for i in range(n)], dtype="f4")
    got = read_variable(path, "tas")
    check(got.shape == want.shape, "%s: shape %s, expected %s" % (what, got.shape, want.shape))
    check(np.array_equal(got, want), "%s: tas differs from the values written into the partitions" % what)
    time = read_variable(path, "time")
    check(time is None or np.array_equal(time, np.arange(n, dtype="f8")), "%s: time differs" % what)


def check_point_series(collection, path, what):
    got = read_variable(path, "tas", (slice(None), 1))
    want = np.array([expected_tas_row(i)[1] for i in range(collection.partitions)], dtype="f4")
    check(np.array_equal(got, want), "%s: the point series tas[:, 1] differs" % what)


def check_bounded(sampler, what):
    print("%s: at most %d descriptors open (%d samples)" % (what, sampler.highest, sampler.samples), flush=True)
    check(sampler.samples > 0, "no /proc/PID/fd sample taken")
    check(sampler.highest <= OPEN_FILES + SLACK, "%s: %d descriptors open at once; open_files=%d"
          % (what, sampler.highest, OPEN_FILES))


def read_through_mount(collection, source, options, name, work):
    with Mount(source, "cache_timeout=0,open_files=%d%s" % (OPEN_FILES, options)) as m:
        virtual = m.path(name)
        copy = os.path.join(work, "cat.nc")
        reads = [("netCDF4-python", lambda: check_values(collection, virtual, "mount " + name)),
                 ("cat", lambda: subprocess.run("cat '%s' > '%s'" % (virtual, copy), shell=True, check=True)),
                 ("point series", lambda: check_point_series(collection, virtual, "mount " + name))]
        for what, read in reads:
            with FdSampler(m.process.pid) as sampler:
                try:
                    read()
                except (OSError, subprocess.CalledProcessError) as e:
                    check(False, "%s of %s through the mount failed (%s); daemon log:\n%s"
                          % (what, name, e, m.log_text()[-2000:]))
            check_bounded(sampler, "%s %s: %s through the mount" % (collection.name, name, what))
        check(m.alive(), "ncafs died while reading " + name)
    check_values(collection, copy, "cat of " + name)
    os.unlink(copy)


def read_by_export(collection, aggregation, options, work):
    out = os.path.join(work, "export.nc")
    process = subprocess.Popen([NCAFS, "export", aggregation, "-o", out, "-o", "open_files=%d" % OPEN_FILES]
                               + (["-o", options] if options else []), stderr=subprocess.PIPE, text=True)
    with FdSampler(process.pid) as sampler:
        _, err = process.communicate(timeout=600)
    check(process.returncode == 0, "ncafs export %s failed (%d): %s" % (aggregation, process.returncode, err))
    check_values(collection, out, "export of " + os.path.basename(aggregation))
    check_bounded(sampler, "%s: export of %s" % (collection.name, os.path.basename(aggregation)))
    os.unlink(out)


def run_case(collection, work):
    """Partitions in SOURCE (fixed) or in sub-folders of an allowed root beside it (records)."""
    source = os.path.join(work, collection.name, "src")
    parts = os.path.join(work, collection.name, "parts") if collection.folders else source
    os.makedirs(source)
    names = write_partitions(collection, parts)
    write_nca(source, names)
    tp.write_cf(NCAFS, os.path.join(source, "cf.nc"), names)
    mount_options = ",allow_root=" + parts if parts != source else ""
    for name in ("cf.nc", "nca.nc"):
        read_through_mount(collection, source, mount_options, name, work)
    for name in ("cf.nc", "nca.nca"):
        read_by_export(collection, os.path.join(source, name), mount_options.lstrip(","), work)
    shutil.rmtree(os.path.join(work, collection.name))


def main():
    reason = fuse_usable()
    if reason:
        if os.environ.get("NCAFS_SKIP_FUSE") == "1":
            print("SKIPPED: " + reason)
            return SKIP
        check(False, reason + " (this test mounts real file systems; set NCAFS_SKIP_FUSE=1 to skip it)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))
    # 22,000 small files: in memory when /dev/shm has room (tiny_partitions.scratch_folder).
    work = tp.scratch_folder("ncafs-fds-", 22_000 * 4096)
    try:
        for collection in (FIXED, RECORDS):
            run_case(collection, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: descriptors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
