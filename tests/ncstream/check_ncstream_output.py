#!/usr/bin/python3
"""Our ncstream output against netcdf-c (through netCDF4-python).

For every CDL file of the corpus: ncgen makes the .nc; ncstream_tool writes
the view (read in scattered pieces), the uncompressed export (must equal the
view byte for byte), a deflated export, and both read back through our .ncs
reader and written again; the independent decoder (decode_ncstream.py)
decodes each, and dimensions, attributes and values are compared with what
netCDF4-python reads from the .nc. The view is also checked against the
profile of docs/formats/ncstream.md ("The profile we write").

    check_ncstream_output.py TOOL PROTO CDL_DIR WORKDIR
"""
import math
import os
import subprocess
import sys

import numpy as np
import netCDF4

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decode_ncstream as dn  # noqa: E402

# numpy dtype of netCDF4-python -> ncstream DataType
NC_TO_PB = {"S1": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float32": 5, "float64": 6,
            "uint8": 14, "uint16": 15, "uint32": 16, "uint64": 17}
OLD_TYPE = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 14: 1, 15: 2, 16: 3, 17: 4}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def same_values(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))) and
                    np.array_equal(np.signbit(a), np.signbit(b)))
    return bool(np.array_equal(a, b))


def compare_attribute(where, pb_att, nc_value):
    kind, value = dn.attribute_value(pb_att)
    if isinstance(nc_value, str):
        check(kind == "text" and value == nc_value, f"{where}: text {value!r} != {nc_value!r}")
        check(pb_att.type == 0 and pb_att.dataType == 7, f"{where}: text types type={pb_att.type} dataType={pb_att.dataType}")
        return
    nc_arr = np.atleast_1d(np.asarray(nc_value))
    check(kind == "numbers", f"{where}: numeric attribute decoded as {kind}")
    if kind != "numbers":
        return
    check(value.dtype.newbyteorder("=") == nc_arr.dtype.newbyteorder("="),
          f"{where}: dtype {value.dtype} != {nc_arr.dtype}")
    check(same_values(value.astype(value.dtype.newbyteorder("=")), nc_arr), f"{where}: {value} != {nc_arr}")
    pbt = NC_TO_PB[nc_arr.dtype.name]
    check(pb_att.HasField("dataType") and pb_att.dataType == pbt, f"{where}: dataType {pb_att.dataType} != {pbt}")
    check(pb_att.type == OLD_TYPE[pbt], f"{where}: old type {pb_att.type} != {OLD_TYPE[pbt]}")


def compare_with_netcdf(label, dec, nc):
    root = dec.header.root
    dims = {d.name: d for d in root.dims}
    check(list(dims) == list(nc.dimensions), f"{label}: dimensions {list(dims)} != {list(nc.dimensions)}")
    for name, nd in nc.dimensions.items():
        if name in dims:
            check(dims[name].length == len(nd), f"{label}: dim {name} length")
            check(dims[name].isUnlimited == nd.isunlimited(), f"{label}: dim {name} unlimited flag")
    atts = {a.name: a for a in root.atts}
    check(list(atts) == nc.ncattrs(), f"{label}: global attribute names")
    for name in nc.ncattrs():
        if name in atts:
            compare_attribute(f"{label}: global :{name}", atts[name], nc.getncattr(name))
    pvars = {v.name: v for v in root.vars}
    check(list(pvars) == list(nc.variables), f"{label}: variables {list(pvars)} != {list(nc.variables)}")
    for name, var in nc.variables.items():
        if name not in pvars:
            continue
        pv = pvars[name]
        pbt = NC_TO_PB[var.dtype.name if var.dtype != np.dtype("S1") else "S1"]
        check(pv.dataType == pbt, f"{label}: {name} dataType {pv.dataType} != {pbt}")
        check([d.name for d in pv.shape] == list(var.dimensions), f"{label}: {name} shape dims")
        patts = {a.name: a for a in pv.atts}
        check(list(patts) == var.ncattrs(), f"{label}: {name} attribute names")
        for an in var.ncattrs():
            if an in patts:
                compare_attribute(f"{label}: {name}:{an}", patts[an], var.getncattr(an))
        var.set_auto_maskandscale(False)
        var.set_auto_chartostring(False)
        expected = np.asarray(var[...])
        got = dec.arrays[name]
        got = got.astype(got.dtype.newbyteorder("=")) if got.dtype.kind != "S" else got
        check(same_values(got, expected), f"{label}: {name} values {got.ravel()[:10]} != {expected.ravel()[:10]}")


def check_profile(label, dec, nc, deflated):
    h = dec.header
    check(h.HasField("location") and h.location.startswith("ncstream_tool/"), f"{label}: Header.location")
    check(h.HasField("version") and h.version == 1, f"{label}: Header.version")
    check(h.root.HasField("name") and h.root.name == "", f"{label}: root Group.name present and empty")
    for a in list(h.root.atts) + [a for v in h.root.vars for a in v.atts]:
        check(a.HasField("type") and a.HasField("len") and a.HasField("dataType"), f"{label}: attribute {a.name} type fields")
    for v in h.root.vars:
        check(v.HasField("dataType"), f"{label}: Variable.dataType of {v.name} written")
        check(not v.HasField("data"), f"{label}: no immediate data for {v.name}")
    names = [dn.unescape(d.varName) for d, _, _ in dec.messages]
    check(names == list(nc.variables), f"{label}: one data message per variable in header order: {names}")
    pvars = {v.name: v for v in h.root.vars}
    for d, stored, at in dec.messages:
        name = dn.unescape(d.varName)
        where = f"{label}: data message of {name} at {at}"
        check(d.HasField("bigend") and d.bigend, f"{where}: bigend=true written")
        check(d.HasField("version") and d.version == 3, f"{where}: version 3")
        check(d.HasField("section"), f"{where}: section present")
        check(not d.HasField("vdata") or not d.vdata, f"{where}: vdata")
        rank = len(pvars[name].shape)
        check(len(d.section.range) == rank, f"{where}: one range per dimension")
        for rg, dim in zip(d.section.range, pvars[name].shape):
            check(rg.HasField("start") and rg.HasField("size") and rg.HasField("stride"), f"{where}: explicit range fields")
            check(rg.start == 0 and rg.size == dim.length and rg.stride == 1, f"{where}: whole shape")
        nbytes = int(np.prod([rg.size for rg in d.section.range], dtype=np.int64)) * \
            np.dtype(dn.DTYPES[d.dataType]).itemsize
        if deflated and nbytes > 0:
            check(d.compress == 1 and d.uncompressedSize == nbytes, f"{where}: DEFLATE with uncompressedSize")
            check(stored[:1] == b"\x78" and (stored[0] * 256 + stored[1]) % 31 == 0, f"{where}: zlib header")
        else:
            check(not d.HasField("compress") or d.compress == 0, f"{where}: uncompressed")
            check(len(stored) == nbytes, f"{where}: payload size")
    if not deflated:
        # Size from metadata: the notes' formula with the lengths found.
        size = 4 + 4 + len(dn_varint(dec.header_length)) + dec.header_length + 4
        for d, stored, _ in dec.messages:
            dl = d.ByteSize()
            size += 4 + len(dn_varint(dl)) + dl + len(dn_varint(len(stored))) + len(stored)
        check(size == dec.size, f"{label}: size formula {size} != file size {dec.size}")


def dn_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit(f"command failed: {' '.join(args)}")
    return r.stdout


def main():
    tool, proto, cdl_dir, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    pb = dn.load_schema(proto, os.path.join(work, "pb"))
    cdls = sorted(f for f in os.listdir(cdl_dir) if f.endswith(".cdl"))
    check(len(cdls) >= 3, "corpus present")
    for cdl in cdls:
        base = os.path.join(work, cdl[:-4])
        nc_path = base + ".nc"
        kind = ["-k", "cdf5"] if cdl.startswith("cdf5") else []
        run(["ncgen"] + kind + ["-o", nc_path, os.path.join(cdl_dir, cdl)])
        view, uncompressed, deflated = base + ".view.ncs", base + ".uncompressed.ncs", base + ".deflate.ncs"
        run([tool, "view", nc_path, view])
        run([tool, "export", nc_path, uncompressed])
        run([tool, "export", nc_path, deflated, "6"])
        with open(view, "rb") as a, open(uncompressed, "rb") as b:
            check(a.read() == b.read(), f"{cdl}: uncompressed export differs from the view")
        # Our reader: the deflated file and the view read back and written again.
        again_view, again_deflated = base + ".again-view.ncs", base + ".again-deflate.ncs"
        run([tool, "view", view, again_view])
        run([tool, "view", deflated, again_deflated])
        with netCDF4.Dataset(nc_path) as nc:
            for label, path, is_deflated in [(cdl + " view", view, False), (cdl + " deflate", deflated, True),
                                             (cdl + " reread view", again_view, False),
                                             (cdl + " reread deflate", again_deflated, False)]:
                try:
                    dec = dn.decode(path, pb)
                except dn.DecodeError as e:
                    check(False, f"{label}: {e}")
                    continue
                compare_with_netcdf(label, dec, nc)
                check_profile(label, dec, nc, is_deflated)
        print(f"{cdl}: checked")
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all ncstream output checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
