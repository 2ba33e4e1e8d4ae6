"""Many tiny netCDF classic partitions, fast: CDF-1 bytes written here (no
netCDF library), and an NCA aggregation of them (JSON written here) or a
CF-1.13 one (`ncafs aggregate --files-from`). Shared by the scaling
benchmark (tests/bench/scale_bench.py) and the memory test
(tests/e2e/test_scale_memory.py).

Partition i: time(time=1) double = i ("days since 2000-01-01") and
tas(time, lat=2, lon=2) float = expected_tas(i).
"""
import contextlib
import json
import os
import shutil
import struct
import subprocess
import tempfile

NLAT, NLON = 2, 2
NC_CHAR, NC_FLOAT, NC_DOUBLE = 2, 5, 6
FILE_BYTES = 4096  # what a partition file takes on tmpfs (one page)


def _name(text):
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw + b"\0" * (-len(raw) % 4)


def _attributes(attrs):
    if not attrs:
        return struct.pack(">ii", 0, 0)
    out = struct.pack(">ii", 0x0C, len(attrs))
    for name, value in attrs.items():
        raw = value.encode()
        out += _name(name) + struct.pack(">ii", NC_CHAR, len(raw)) + raw + b"\0" * (-len(raw) % 4)
    return out


def cdf1_bytes(dims, variables, gatts=None, numrecs=0):
    """dims: [(name, length)], length 0 for the record dimension; variables:
    [(name, [dimid], nc_type, {attr: text}, data bytes)]. With numrecs 1 every
    variable may be a record variable: one record lays them out in order, as
    fixed-size ones are."""
    dim_list = struct.pack(">ii", 0x0A, len(dims)) + b"".join(_name(n) + struct.pack(">i", n_) for n, n_ in dims)

    def header(begins):
        var_list = struct.pack(">ii", 0x0B, len(variables))
        for (name, dimids, nc_type, attrs, data), begin in zip(variables, begins):
            vsize = len(data) + (-len(data) % 4)
            var_list += (_name(name) + struct.pack(">i", len(dimids)) + b"".join(struct.pack(">i", d) for d in dimids)
                         + _attributes(attrs) + struct.pack(">iii", nc_type, vsize, begin))
        return b"CDF\x01" + struct.pack(">i", numrecs) + dim_list + _attributes(gatts) + var_list

    begins, at = [], len(header([0] * len(variables)))
    for v in variables:
        begins.append(at)
        at += len(v[4]) + (-len(v[4]) % 4)
    body = b"".join(v[4] + b"\0" * (-len(v[4]) % 4) for v in variables)
    return header(begins) + body


def expected_tas(index):
    """The 2x2 values of partition `index` (row-major lat, lon)."""
    return [index * 10.0 + k + 0.5 for k in range(NLAT * NLON)]


def partition_bytes(index):
    tas = struct.pack(">%df" % (NLAT * NLON), *expected_tas(index))
    return cdf1_bytes([("time", 1), ("lat", NLAT), ("lon", NLON)],
                      [("time", [0], NC_DOUBLE, {"units": "days since 2000-01-01"}, struct.pack(">d", float(index))),
                       ("tas", [0, 1, 2], NC_FLOAT, {"units": "K"}, tas)])


def _fast_partition_bytes():
    """partition_bytes, with the header (the same for every partition: only
    the two values differ) built once; checked against partition_bytes."""
    header = partition_bytes(0)[:-(8 + 4 * NLAT * NLON)]
    values = struct.Struct(">d%df" % (NLAT * NLON))

    def bytes_of(index):
        return header + values.pack(float(index), *expected_tas(index))

    for index in (0, 1, 12345):
        assert bytes_of(index) == partition_bytes(index), "the header of a partition depends on its index"
    return bytes_of


def write_partitions(folder, n, bytes_of=partition_bytes, pattern="part_%07d.nc"):
    """n partition files (pattern % i, bytes_of(i)) in folder; returns their paths."""
    os.makedirs(folder, exist_ok=True)
    if bytes_of is partition_bytes:
        bytes_of = _fast_partition_bytes()
    names = []
    for i in range(n):
        name = os.path.join(folder, pattern % i)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, bytes_of(i))
        finally:
            os.close(fd)
        names.append(name)
    return names


def scratch_folder(prefix, need_bytes):
    """A private temporary folder for many small files: in /dev/shm (tmpfs)
    when it has four times need_bytes free, as creating a hundred thousand
    files on a disk shared with other jobs takes minutes, in memory seconds;
    otherwise in the default temporary folder."""
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
        if os.access(shm, os.W_OK) and st.f_bavail * st.f_frsize > 4 * need_bytes:
            return tempfile.mkdtemp(prefix=prefix, dir=shm)
    except OSError:
        pass
    return tempfile.mkdtemp(prefix=prefix)


@contextlib.contextmanager
def scratch(prefix, need_bytes):
    """scratch_folder(), removed with all it holds when the block ends."""
    folder = scratch_folder(prefix, need_bytes)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_nca(path, names):
    """An NCA aggregation (nca_array JSON) of the partitions, names relative to path's folder."""
    folder = os.path.dirname(os.path.abspath(path))
    # json.dumps of {"index": [i], "location": [[i, i], [0, NLAT - 1], [0, NLON - 1]], "subarray": {"file":
    # relative name, "ncvar": "tas", "shape": [1, NLAT, NLON]}}, as a format: a tenth of the time.
    entry = ('{"index": [%%d], "location": [[%%d, %%d], [0, %d], [0, %d]], "subarray": {"file": %%s, '
             '"ncvar": "tas", "shape": [1, %d, %d]}}' % (NLAT - 1, NLON - 1, NLAT, NLON))
    relative = _relative_names(names, folder)
    parts = ",".join(entry % (i, i, i, json.dumps(r)) for i, r in enumerate(relative))
    text = ('{"pmdimensions": ["time"], "pmshape": [%d], "Partitions": [%s]}' % (len(names), parts))
    times = struct.pack(">%dd" % len(names), *[float(i) for i in range(len(names))])
    data = cdf1_bytes([("time", len(names)), ("lat", NLAT), ("lon", NLON)],
                      [("time", [0], NC_DOUBLE, {"units": "days since 2000-01-01"}, times),
                       ("tas", [], NC_FLOAT, {"units": "K", "cf_role": "nca_variable",
                                              "nca_dimensions": "time lat lon", "nca_array": text},
                        struct.pack(">f", 0.0))],
                      {"Conventions": "CF-1.5 NCA"})
    with open(path, "wb") as f:
        f.write(data)
    return path


def _relative_names(names, folder):
    """os.path.relpath(n, folder) for each name, computed once per parent folder."""
    parents = {}
    out = []
    for n in names:
        parent, base = n.rpartition("/")[::2]
        if parent not in parents:
            parents[parent] = os.path.relpath(parent or ".", folder)
        out.append(base if parents[parent] == "." else parents[parent] + "/" + base)
    return out


def write_cf(ncafs, path, names):
    """A CF-1.13 aggregation of the partitions by `ncafs aggregate --files-from`;
    returns the command's peak resident memory (KiB, its ru_maxrss)."""
    listing = path + ".files"
    with open(listing, "w") as f:
        f.write("\n".join(names) + "\n")
    command = [ncafs, "aggregate", "--dim", "time", "--files-from", listing, "-o", path]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, command)
    os.unlink(listing)
    return usage.ru_maxrss
