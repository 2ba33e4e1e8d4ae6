#!/usr/bin/python3
"""Every format's largest claims within the memory bound: for each format a
file whose counts are as large as its syntax allows (repeated fields,
declared shapes, fragment and chunk counts, string lengths), served by a
real mount. `ls -l`, `stat` and `cat` of every entry each cost the daemon
under 10 s of CPU (and answer within 120 s: wall time is decided by what
runs beside), the daemon stays under 512 MiB (VmHWM from /proc) and one log
line names the file and what it claimed.

Run as: test_claims.py CASE
  ncstream  a 60 MB header of 30 million empty Dimension messages in one
            variable's shape (refused for its count before protobuf parses
            it); 200 STRING variables of 8 million values declared by a 4 KB
            header; a data message claiming 2 GiB in a sparse file
  vds       a VolumeDataLayout of 110,000 metadata entries (16 MB, what
            the container allows it: refused for what its attributes
            would cost) and one whose axes claim 2^31 x 2^31 samples
  nca       pmshape [2^40] as nca_array (NCA) and as cfa_array (CFA-0.4),
            and a 20,000-partition list
  cf        a CF-1.13 map claiming 2^20 x 2^20 fragments (refused by
            max_fragments) and a constant map of 10,000 fragments
  zarr2     Zarr v2 stores of 1,100 arrays (1,000 shown), one array of 2^62
            elements, 8 with 20,000-value attributes; one whose top .zattrs
            holds 5 million empty lists (16 MB: refused for its parsed size)
  zarr3     the same as Zarr v3 (zarr.json), one array sharded with 2^40
            chunks a shard
Environment: NCAFS_BIN, NCAFS_SKIP_FUSE=1 (exit 77 where /dev/fuse is unusable).
"""
import json
import os
import subprocess
import sys

import netCDF4
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vds"))
from test_mount import Mount, check, run_cases  # noqa: E402
import make_vds  # noqa: E402
import vds_mount_test  # noqa: E402
from test_budgets import ANSWER, HELD_TO, check_peak, expect_logged, new_source, stat_or_none, timed  # noqa: E402

BOUND_MIB = 512


def survived(src, views, logged, answer=ANSWER):
    """Mounts src: `ls -l`, then `stat` of every entry and of `views`, and
    `cat` of every view, each costing the daemon under `answer` s of CPU; the daemon stays under the
    bound and logs a line holding each tuple of logged."""
    with Mount(src, HELD_TO) as m:
        listing = timed(m, "ls -l", lambda: subprocess.run(["ls", "-l", m.mnt], capture_output=True, text=True,
                                                            timeout=600), answer)
        names = sorted(set(os.listdir(m.mnt)) | set(views))
        print("listed: " + " ".join(sorted(os.listdir(m.mnt))))
        for name in names:
            timed(m, "stat " + name, lambda: stat_or_none(m.path(name)), answer)
            if not os.path.exists(os.path.join(src, name)) and os.path.isfile(m.path(name)):  # a view
                timed(m, "cat " + name, lambda: subprocess.run("cat '%s' > /dev/null" % m.path(name), shell=True,
                                                               capture_output=True, timeout=600), answer)
        check(m.alive(), "the daemon died:\n" + m.log_text()[-3000:])
        check_peak(m, BOUND_MIB, os.path.basename(src))
        for needles in logged:
            print("logged: " + expect_logged(m, *needles))
        return listing.stdout


# ------------------------------------------------------------------ ncstream
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def vint(number, value):
    return varint(number << 3) + varint(value)


NCS_START, NCS_HEADER, NCS_DATA, NCS_END = b"CDFS", b"\xad\xec\xce\xda", b"\xab\xec\xce\xba", b"\xed\xed\xde\xde"


def ncs_header(group_fields):
    return field(4, field(1, b"") + group_fields)  # Header.root = Group{name, ...}


def variable(name, datatype, shape_fields=b""):
    return field(1, name.encode()) + vint(2, datatype) + shape_fields


def write_ncs(path, header, tail=b""):
    with open(path, "wb") as f:
        f.write(NCS_START + NCS_HEADER + varint(len(header)) + header + tail + NCS_END)


def case_ncstream(work):
    src = new_source(work)
    n = 30_000_000  # empty Dimension messages, 2 bytes each: the most objects a 60 MB header can make
    one_var = variable("v", 3, b"\x1a\x00" * n)
    write_ncs(os.path.join(src, "dims.ncs"), ncs_header(field(3, one_var)))
    # 200 STRING variables of 8 million values each (the per-variable limit allows 8.4 million).
    strings = field(2, field(1, b"n") + vint(2, 8_000_000))
    for i in range(200):
        strings += field(3, variable("s%d" % i, 7, field(3, field(1, b"n") + vint(2, 8_000_000))))
    write_ncs(os.path.join(src, "strings.ncs"), ncs_header(strings))
    # A data message claiming 2 GiB - 1: the file is that long (sparse), its bytes zero.
    small = ncs_header(field(2, field(1, b"x") + vint(2, 4)) + field(3, variable("v", 3, field(3, field(1, b"x")))))
    with open(os.path.join(src, "datamsg.ncs"), "wb") as f:
        f.write(NCS_START + NCS_HEADER + varint(len(small)) + small + NCS_DATA + varint((1 << 31) - 1))
        f.truncate(1 << 31 | 4096)
    survived(src, ["dims.nc", "strings.nc", "datamsg.nc", "dims.vds"],
             [("dims.ncs", "header entries"), ("strings.ncs", "max_file_metadata_mem"), ("datamsg.ncs", "data message")])


# ------------------------------------------------------------------ VDS
def vds_with_layout(path, edit):
    """A small valid 2-D U8 volume whose layout JSON `edit` changes, written as a container."""
    layout = {"layoutDescriptor": vds_mount_test.descriptor(32, 0, 4, 0), "metadata": [],
              "channelDescriptors": [vds_mount_test.channel("Amplitude", "U8")],
              "axisDescriptors": [vds_mount_test.axis("Sample", 4, "ms", 0, 3),
                                  vds_mount_test.axis("Trace", 3, "", 1, 3)]}
    values = np.arange(12, dtype=np.uint8).reshape(3, 4)
    edit(layout)
    make_vds.write_vds(path, layout, [(layout["channelDescriptors"][0], values, [0, 1], "None", lambda b: None)])


def case_vds(work):
    src = new_source(work)

    def many_entries(layout):  # as many metadata entries as the layout JSON's bound of values allows
        layout["metadata"] = [{"category": "c", "name": "n%d" % i, "type": "String", "value": ""}
                              for i in range(110_000)]
    vds_with_layout(os.path.join(src, "entries.vds"), many_entries)

    def huge_axes(layout):  # 2^31-sample axes of 32-sample bricks: 2^52 chunks claimed by 12 samples
        for a in layout["axisDescriptors"]:
            a["numSamples"] = (1 << 31) - 1
    vds_with_layout(os.path.join(src, "axes.vds"), huge_axes)
    survived(src, ["entries.nc", "axes.nc", "entries.ncs", "axes.ds"], [("entries.vds", "110000 metadata entries"), ("axes.vds", "2^60")])


# ------------------------------------------------------------------ NCA, CFA-0.4
PART = '{"index": [%d], "location": [[%d, %d]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [1]}}'


def partitions_text(n, matrix=None):
    return ('{"pmdimensions": ["x"], "pmshape": [%d], "Partitions": [%s]}'
            % (matrix or n, ",".join(PART % (i, i, i) for i in range(n))))


def nca_json(path, n, text, attr="nca_array"):
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_DATA") as ds:
        ds.createDimension("x", n)
        v = ds.createVariable("v", "f4", ())
        role = attr.split("_")[0]
        v.cf_role = role + "_variable"
        setattr(v, role + "_dimensions", "x")
        setattr(v, attr, text)
        ds.Conventions = "CF-1.5 NCA" if role == "nca" else "CF-1.5 CFA-0.4"


def case_nca(work):
    src = new_source(work)
    nca_json(os.path.join(src, "matrix.nca"), 1 << 40, partitions_text(1, matrix=1 << 40))
    nca_json(os.path.join(src, "cfa.nca"), 1 << 40, partitions_text(1, matrix=1 << 40), attr="cfa_array")
    nca_json(os.path.join(src, "list.nca"), 20_000, partitions_text(20_000))
    survived(src, ["list.nc", "cfa.nc", "matrix.nc"], [])


# ------------------------------------------------------------------ CF-1.13
def cf_constant_map(path, n, m=None):
    """CF-1.13: n x m fragments of one element each, every one a value of its own (CDF-5)."""
    m = m or n
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_DATA") as ds:
        for name, size in [("t", n), ("x", m), ("j", 2), ("i", max(n, m)), ("ft", n), ("fx", m)]:
            ds.createDimension(name, size)
        q = ds.createVariable("q", "i4", ())
        q.aggregated_dimensions = "t x"
        q.aggregated_data = "map: fmap unique_values: fval"
        fmap = ds.createVariable("fmap", "i4", ("j", "i"))
        fmap[:] = np.ones((2, max(n, m)), "i4")
        fval = ds.createVariable("fval", "i4", ("ft", "fx"))
        fval[:] = np.full((n, m), 7, "i4")
        ds.Conventions = "CF-1.13"


def case_cf(work):
    src = new_source(work)
    cf_constant_map(os.path.join(src, "vast.nc"), 1 << 20, 1)  # a map claiming 2^20 x 2^20 fragments
    cf_constant_map(os.path.join(src, "some.nc"), 100)  # 10,000 fragments
    survived(src, ["vast.nc", "some.nc"], [("vast.nc", "fragments")])


# ------------------------------------------------------------------ Zarr stores
def zarr_v2_store(root, arrays, zattrs_bytes):
    os.makedirs(root)
    with open(os.path.join(root, ".zgroup"), "w") as f:
        f.write('{"zarr_format": 2}')
    with open(os.path.join(root, ".zattrs"), "w") as f:  # as many JSON values as 16 MiB holds
        f.write('{"a": [' + ",".join(["[]"] * (zattrs_bytes // 3)) + "]}")
    for i in range(arrays):
        d = os.path.join(root, "a%06d" % i)
        os.mkdir(d)
        with open(os.path.join(d, ".zarray"), "w") as f:
            f.write(zarray_text([(1 << 62) if i == 0 else 1], [1]))
        with open(os.path.join(d, ".zattrs"), "w") as f:
            f.write('{"_ARRAY_DIMENSIONS": ["d%d"], "l": [%s]}' % (i, ",".join(["0"] * (20_000 if i < 8 else 1))))


def zarray_text(shape, chunks):
    return json.dumps({"chunks": chunks, "compressor": None, "dtype": "<f4", "fill_value": 0.0, "filters": None,
                       "order": "C", "shape": shape, "zarr_format": 2})


def zarr_case(work, write_store):
    """A store whose top metadata is as dense as 16 MB allows, and one of 1,100 arrays."""
    src = new_source(work)
    write_store(os.path.join(src, "many.zarr"), 1_100, 16_000_000)
    write_store(os.path.join(src, "arrays.zarr"), 1_100, 3)
    survived(src, ["many.nc", "many.vds", "arrays.nc", "arrays.ds"],
             [("many.zarr", "max_file_metadata_mem"), ("arrays.zarr", "1000 arrays")])


def zarr_v3_store(root, arrays, attrs_bytes):
    os.makedirs(root)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        f.write('{"zarr_format": 3, "node_type": "group", "attributes": {"a": [%s]}}'
                % ",".join(["[]"] * (attrs_bytes // 3)))
    for i in range(arrays):
        d = os.path.join(root, "a%06d" % i)
        os.mkdir(d)
        shard = {"name": "sharding_indexed", "configuration": {
            "chunk_shape": [1], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}
        node = {"zarr_format": 3, "node_type": "array", "shape": [(1 << 62) if i < 2 else 1],
                "data_type": "float32", "fill_value": 0.0, "dimension_names": ["d%d" % i],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [(1 << 40) if i == 1 else 1]}},
                "chunk_key_encoding": {"name": "default"},
                "codecs": [shard] if i == 1 else [{"name": "bytes", "configuration": {"endian": "little"}}],
                "attributes": {"l": [0] * (20_000 if i < 8 else 1)}}
        with open(os.path.join(d, "zarr.json"), "w") as f:
            json.dump(node, f)


CASES = {"ncstream": case_ncstream, "vds": case_vds, "nca": case_nca, "cf": case_cf,
         "zarr2": lambda work: zarr_case(work, zarr_v2_store), "zarr3": lambda work: zarr_case(work, zarr_v3_store)}


def main():
    return run_cases(CASES, "ncafs-claims-")


if __name__ == "__main__":
    sys.exit(main())
