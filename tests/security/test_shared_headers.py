#!/usr/bin/python3
"""Partitions whose header bytes look alike, attacked, through a real mount.

Run as: test_shared_headers.py CASE   (CASE: flip, short)
Environment: NCAFS_BIN (the ncafs executable, set by CMake), NCAFS_SKIP_FUSE=1
to report "skipped" (exit 77) where /dev/fuse is unusable.

The daemon parses one header for classic partitions whose header bytes are
equal (numrecs aside) and shares the data layout checked for one of them
with the others of the same size or longer (codecs/cdf/shared_headers.hpp).
An aggregation of 1,000 partitions alike, in order, so that the shared
parse and layout are in use when the odd one comes:
  flip:  one partition's header differs in one byte (tas stored as int, not
         float: same size, still valid): its values must be its own, the
         int bytes converted to float (numpy reads them here, and
         netCDF4-python reads the partition itself), never the float
         interpretation the shared parse would give;
  short: one partition has the others' header but lacks its last 4 data
         bytes: a read of the view fails (EIO), the log naming the file and
         why; netCDF4-python reading the variable raises, on the first open
         (page cache: the kernel may answer short, which netcdf-c
         zero-fills) and on later ones (direct I/O).
"""
import errno
import os
import struct
import sys

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import tiny_partitions as tp  # noqa: E402
from test_mount import Mount, check, run_cases  # noqa: E402

N = 1000
ODD = 500


def int_partition_bytes(index):
    """Partition index with tas declared int: one header byte differs."""
    tas = struct.pack(">%df" % (tp.NLAT * tp.NLON), *tp.expected_tas(index))
    return tp.cdf1_bytes([("time", 1), ("lat", tp.NLAT), ("lon", tp.NLON)],
                         [("time", [0], tp.NC_DOUBLE, {"units": "days since 2000-01-01"},
                           struct.pack(">d", float(index))),
                          ("tas", [0, 1, 2], 4, {"units": "K"}, tas)])  # 4: NC_INT


def one_byte_apart(a, b):
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1


def aggregation(work, odd_bytes):
    """SOURCE with an NCA aggregation of N partitions, partition ODD's bytes
    replaced by odd_bytes; returns (source, path of the odd partition)."""
    source = os.path.join(work, "src")
    names = tp.write_partitions(os.path.join(source, "parts"), N)
    with open(names[ODD], "wb") as f:
        f.write(odd_bytes)
    tp.write_nca(os.path.join(source, "alike.nca"), names)
    return source, names[ODD]


def expected_master():
    return np.array([tp.expected_tas(i) for i in range(N)], dtype=np.float32).reshape(N, tp.NLAT, tp.NLON)


def case_flip(work):
    odd = int_partition_bytes(ODD)
    check(one_byte_apart(odd[:len(odd) - 24], tp.partition_bytes(ODD)[:len(odd) - 24]),
          "the odd header differs from the others in exactly one byte")
    source, odd_path = aggregation(work, odd)
    stored = np.frombuffer(odd[-16:], dtype=">i4")
    with netCDF4.Dataset(odd_path) as ds:
        theirs = ds["tas"][:].data.reshape(-1)
    check(np.array_equal(theirs, stored), "netCDF4-python reads the odd partition as its int bytes")
    want = expected_master()
    want[ODD] = stored.astype(np.float32).reshape(tp.NLAT, tp.NLON)
    with Mount(source, "open_files=64") as m:
        with netCDF4.Dataset(m.path("alike.nc")) as ds:
            got = ds["tas"][:]
        check(np.array_equal(np.asarray(got), want),
              "every partition reads as its own bytes; partition %d: %s, expected %s"
              % (ODD, np.asarray(got)[ODD].reshape(-1), want[ODD].reshape(-1)))
        check(not np.array_equal(want[ODD], expected_master()[ODD]), "the odd values differ from a float reading")


def read_until_error(path):
    """The errno that ends a byte read of the whole file, or None."""
    with open(path, "rb", buffering=0) as f:
        try:
            while f.read(1 << 20):
                pass
        except OSError as e:
            return e.errno
    return None


def netcdf_read_fails(path):
    """True when netCDF4-python reading all of tas raises; False when it
    returns values (which must then not be silently zero-filled)."""
    try:
        with netCDF4.Dataset(path) as ds:
            got = np.asarray(ds["tas"][:])
    except (OSError, RuntimeError):
        return True
    wrong = np.flatnonzero(np.any(got.reshape(N, -1) != expected_master().reshape(N, -1), axis=1))
    print("netCDF4-python read without error; partitions with other values: %s" % wrong[:20].tolist())
    return False


def case_short(work):
    source, odd_path = aggregation(work, tp.partition_bytes(ODD)[:-4])
    with Mount(source, "open_files=64") as m:
        # Byte reads, not netcdf-c: it takes the short read before a failed
        # page for the end of the file and reads zeros past it.
        check(read_until_error(m.path("alike.nc")) == errno.EIO,
              "a partition 4 bytes short of its data is not served (EIO)")
        log = m.log_text()
        check(odd_path in log and "beyond the end of the file" in log,
              "the log names the short partition and why:\n" + log[-2000:])
    # A fresh mount, so the first read through netcdf-c meets the damage
    # through the page cache: it must raise, never return zeros for it.
    with Mount(source, "open_files=64") as m:
        for attempt in ("first open", "second open (direct I/O)"):
            check(netcdf_read_fails(m.path("alike.nc")),
                  "netCDF4-python reading the whole variable raises (%s), no silent fill" % attempt)
        with open(m.path("alike.nc"), "rb", buffering=0) as f:
            check(f.read(4) == b"CDF\x01", "a byte read that does not need the damaged partition still reads")


CASES = {"flip": case_flip, "short": case_short}


def main():
    os.environ["NCAFS_TEST_SETTLE_MS"] = "0"  # files written just now: read once, as settled ones
    return run_cases(CASES, "ncafs-shared-headers-")


if __name__ == "__main__":
    sys.exit(main())
