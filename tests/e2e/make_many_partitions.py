#!/usr/bin/python3
"""Writes an NCA aggregation of N tiny classic (CDF-1) partitions, the bytes
composed here directly (netCDF4-python would take minutes for 100,000 files).

Partition p (part/pNNNNNN.nc): record dimension time with numrecs[p] records,
x = X, float v(time, x) = p * 100 + t * X + i (exact in float32 for up to
3 records and 160,000 partitions). The
aggregation many.nca (written with netCDF4-python) lays the partitions along
time. Every value follows from expected(), computed here from the inputs.

usage: make_many_partitions.py FOLDER N [RECORDS_PATTERN]
RECORDS_PATTERN: comma-separated records per partition, repeated (default 1).
"""
import json
import os
import struct
import sys

import numpy as np

X = 32  # 128 bytes of data per record


def _name(s):
    b = s.encode()
    return struct.pack(">i", len(b)) + b + b"\0" * (-len(b) % 4)


def classic_partition(numrecs, p):
    """The bytes of one CDF-1 file: dims time (unlimited), x; float v(time, x)."""
    NC_DIMENSION, NC_VARIABLE, NC_FLOAT = 10, 11, 5
    dims = struct.pack(">ii", NC_DIMENSION, 2) + _name("time") + struct.pack(">i", 0) + _name("x") + struct.pack(">i", X)
    no_atts = struct.pack(">ii", 0, 0)

    def header(begin):
        var = _name("v") + struct.pack(">iii", 2, 0, 1) + no_atts + struct.pack(">iii", NC_FLOAT, 4 * X, begin)
        return b"CDF\x01" + struct.pack(">i", numrecs) + dims + no_atts + struct.pack(">ii", NC_VARIABLE, 1) + var

    head = header(0)
    head = header(len(head))
    return head + values(numrecs, p).astype(">f4").tobytes()


def values(numrecs, p):
    return (p * 100 + np.arange(numrecs * X, dtype=np.float64)).reshape(numrecs, X)


def records_of(n, pattern):
    return [pattern[p % len(pattern)] for p in range(n)]


def expected(n, pattern):
    """The master array v(time, x), from the same formulas."""
    return np.concatenate([values(r, p) for p, r in enumerate(records_of(n, pattern))]).astype(np.float32)


def write(folder, n, pattern=(1,)):
    """Writes FOLDER/part/*.nc and FOLDER/many.nca; returns the .nca path."""
    import netCDF4

    if max(pattern) * X > 100 or n > 160000:
        raise ValueError("values would not be exact in float32")
    part_dir = os.path.join(folder, "part")
    os.makedirs(part_dir, exist_ok=True)
    partitions, t = [], 0
    for p, r in enumerate(records_of(n, pattern)):
        name = "part/p%06d.nc" % p
        with open(os.path.join(folder, name), "wb") as f:
            f.write(classic_partition(r, p))
        partitions.append({"index": [p], "location": [[t, t + r - 1], [0, X - 1]],
                           "subarray": {"file": name, "ncvar": "v", "shape": [r, X]}})
        t += r
    path = os.path.join(folder, "many.nca")
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.createDimension("time", t)
        ds.createDimension("x", X)
        c = ds.createVariable("v", "f4", (), fill_value=False)
        c.cf_role = "nca_variable"
        c.nca_dimensions = "time x"
        c.nca_array = json.dumps({"directions": {"time": True, "x": True}, "pmdimensions": ["time"],
                                  "pmshape": [n], "Partitions": partitions}, separators=(",", ":"))
    return path


if __name__ == "__main__":
    pattern = tuple(int(v) for v in sys.argv[3].split(",")) if len(sys.argv) > 3 else (1,)
    print(write(sys.argv[1], int(sys.argv[2]), pattern))
