#!/usr/bin/python3
"""Open descriptors stay bounded by open_files= however many fragments an
aggregation has (issue 13 item 1: the CF reader used to keep every fragment
file open and failed past the descriptor limit).

5,000 classic partitions (CDF-1 bytes written here, checked with netCDF4-python)
are aggregated twice: as CF-1.13 by `ncafs aggregate` and as NCA JSON written
here. Under `ulimit -n 256` (set on this process, inherited by the daemon and
by `ncafs export`) each aggregation is read whole through a real mount and by
`ncafs export`, compared with the values computed from the inputs, and the
daemon's /proc/PID/fd is sampled during the read.

Run as: test_descriptors.py   (NCAFS_BIN: the ncafs executable)
"""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_partitions as tp  # noqa: E402
from test_mount import NCAFS, SKIP, Mount, check, fuse_usable  # noqa: E402

PARTITIONS = 5000
WIDTH = 4              # x length of every partition
FD_LIMIT = 256         # ulimit -n of this process and its children
OPEN_FILES = 64        # the mount's and export's open_files=
SLACK = 24             # stdio, /dev/fuse, logs, the aggregation file, the catalog's own files


def cdf1_partition(index):
    """CDF-1 bytes of a file with time(time=1) double and tas(time, x) float."""
    tas_values = np.asarray(expected_tas_row(index), dtype=">f4").tobytes()
    return tp.cdf1_bytes([("time", 1), ("x", WIDTH)],
                         [("time", [0], tp.NC_DOUBLE, {"units": "days since 2000-01-01"}, struct.pack(">d", float(index))),
                          ("tas", [0, 1], tp.NC_FLOAT, {"units": "K"}, tas_values)])


def expected_tas_row(index):
    return [index * 10.0 + x + 0.5 for x in range(WIDTH)]


def write_partitions(folder):
    names = tp.write_partitions(folder, PARTITIONS, cdf1_partition, "part_%05d.nc")
    import netCDF4  # the hand-written bytes as netcdf-c reads them
    for i in (0, PARTITIONS - 1):
        with netCDF4.Dataset(names[i]) as ds:
            check(np.array_equal(ds["tas"][...], np.array([expected_tas_row(i)], dtype="f4")),
                  "netCDF4-python reads the generated partition %d differently" % i)
            check(ds["time"][0] == i, "partition %d time" % i)
    return names


def write_nca(folder, names):
    import netCDF4
    partitions = [{"index": [i], "location": [[i, i], [0, WIDTH - 1]],
                   "subarray": {"file": os.path.basename(n), "ncvar": "tas", "shape": [1, WIDTH]},
                   "format": "netCDF"} for i, n in enumerate(names)]
    path = os.path.join(folder, "nca.nca")
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.createDimension("time", PARTITIONS)
        ds.createDimension("x", WIDTH)
        carrier = ds.createVariable("tas", "f4", (), fill_value=False)
        carrier.units = "K"
        carrier.cf_role = "nca_variable"
        carrier.nca_dimensions = "time x"
        carrier.nca_array = json.dumps({"directions": {"time": True, "x": True}, "pmdimensions": ["time"],
                                        "pmshape": [PARTITIONS], "Partitions": partitions})
    return path


class FdSampler:
    """Counts /proc/PID/fd entries every few milliseconds until stopped."""

    def __init__(self, pid):
        self.pid, self.highest, self.samples = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.highest = max(self.highest, len(os.listdir("/proc/%d/fd" % self.pid)))
                self.samples += 1
            except OSError:
                return  # the process ended
            self._stop.wait(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False


def read_tas(path):
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        v = ds["tas"]
        v.set_auto_maskandscale(False)
        return np.array(v[...])


def check_values(got, what):
    want = np.array([expected_tas_row(i) for i in range(PARTITIONS)], dtype="f4")
    check(got.shape == want.shape, "%s: shape %s, expected %s" % (what, got.shape, want.shape))
    check(np.array_equal(got, want), "%s: values differ from those written into the partitions" % what)


def read_through_mount(source, name):
    with Mount(source, "cache_timeout=0,open_files=%d" % OPEN_FILES) as m:
        virtual = m.path(name)
        with FdSampler(m.process.pid) as sampler:
            try:
                got = read_tas(virtual)
            except OSError as e:
                check(False, "reading %s through the mount failed (%s); daemon log:\n%s" % (name, e, m.log_text()[-2000:]))
        check(m.alive(), "ncafs died while reading " + name)
    check_values(got, "mount " + name)
    print("%s through the mount: at most %d descriptors open in the daemon (%d samples)"
          % (name, sampler.highest, sampler.samples), flush=True)
    check(sampler.samples > 0, "no /proc/PID/fd sample taken")
    check(sampler.highest <= OPEN_FILES + SLACK, "the daemon had %d descriptors open reading %s; open_files=%d"
          % (sampler.highest, name, OPEN_FILES))


def read_by_export(aggregation, work):
    out = os.path.join(work, "export.nc")
    process = subprocess.Popen([NCAFS, "export", aggregation, "-o", out, "-o", "open_files=%d" % OPEN_FILES],
                               stderr=subprocess.PIPE, text=True)
    with FdSampler(process.pid) as sampler:
        _, err = process.communicate(timeout=600)
    check(process.returncode == 0, "ncafs export %s failed (%d): %s" % (aggregation, process.returncode, err))
    check_values(read_tas(out), "export of " + os.path.basename(aggregation))
    print("export of %s: at most %d descriptors seen" % (os.path.basename(aggregation), sampler.highest), flush=True)
    check(sampler.highest <= OPEN_FILES + SLACK, "ncafs export had %d descriptors open" % sampler.highest)
    os.unlink(out)


def main():
    reason = fuse_usable()
    if reason:
        if os.environ.get("NCAFS_SKIP_FUSE") == "1":
            print("SKIPPED: " + reason)
            return SKIP
        check(False, reason + " (this test mounts real file systems; set NCAFS_SKIP_FUSE=1 to skip it)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))
    work = tempfile.mkdtemp(prefix="ncafs-fds-")
    try:
        source = os.path.join(work, "src")
        os.makedirs(source)
        names = write_partitions(source)
        write_nca(source, names)
        subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(source, "cf.nc")] + names, check=True)
        for name in ("cf.nc", "nca.nc"):
            read_through_mount(source, name)
        for name in ("cf.nc", "nca.nca"):
            read_by_export(os.path.join(source, name), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: descriptors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
