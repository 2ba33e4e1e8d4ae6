#!/usr/bin/python3
"""Independent expectation for ncafs's cf ds view.

Writes OUT.ds for the netCDF file IN the way `ds select IN OUT.ds`
(ds-format 5.0.2) does, implemented here from the ds-1.0 specification
with netCDF4-python's default (masked and scaled) view and Python's json
module -- it shares no code with the C++ under test.

Usage: expected_ds.py IN.nc OUT.ds
Exit status 3 when the reference writer has no defined output for IN
(the spec's edge cases), so that callers can skip such files.
"""
import json
import sys

import netCDF4
import numpy as np


class NoReference(Exception):
    pass


def attr_value(v):
    # What json.dumps makes of netCDF4-python's getncattr value (ds-format's
    # JSONEncoder: numpy scalars via .item(), arrays as lists of items).
    if isinstance(v, bytes):
        # _FillValue of a char variable comes back as bytes; ds-format's
        # encoder cannot write bytes.
        raise NoReference("bytes attribute")
    if isinstance(v, np.ndarray):
        return [attr_value(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def ds_type(dtype):
    if dtype.kind == "S":
        return "str"
    if dtype.kind == "U" or dtype.kind == "O":
        return "unicode"
    if dtype.kind == "b":
        return "bool"
    kind = {"i": "int", "u": "uint", "f": "float"}[dtype.kind]
    return "%s%d" % (kind, dtype.itemsize * 8)


def escape(name):
    return "\\" + name if name.startswith((".", "\\")) else name


def main(src, dst):
    header = {}
    blocks = []
    offset = 0
    with netCDF4.Dataset(src) as f:
        if f.groups:
            pass  # root group only
        for name in sorted(f.variables.keys()):
            var = f.variables[name]
            meta = {}
            for a in var.ncattrs():
                meta[a] = attr_value(var.getncattr(a))
            meta[".dims"] = list(var.dimensions)
            meta[".size"] = list(var.shape)
            meta[".type"] = ds_type(var.dtype)
            data = var[...]
            if var.ndim == 0 and data is np.ma.masked:
                meta[".size"] = None
                meta[".offset"] = offset
                meta[".len"] = 0
                meta[".missing"] = False
                header[escape(name)] = meta
                continue
            data = np.ma.asarray(data)
            mask = np.ma.getmaskarray(data).ravel()
            values = np.asarray(data.data).ravel()
            kept = values[~mask]
            missing = bool(mask.any())
            block = b""
            if missing:
                block += np.packbits(mask).tobytes()
            if values.dtype.kind == "S":
                if values.dtype.itemsize != 1:
                    raise NoReference("string variable")
                if any(len(x) != 1 for x in kept.tolist()):
                    raise NoReference("unmasked NUL characters")
                # Masked chars: the reference writer fails; the format rules
                # (mask, then the kept 1-byte strings) define the output.
                block += np.ones(len(kept), "<u8").tobytes() + b"".join(kept.tolist())
                endian = "l"
            else:
                le = kept.astype(kept.dtype.newbyteorder("<"))
                block += le.tobytes()
                endian = "b" if values.dtype.itemsize == 1 else "l"
            meta[".size"] = list(data.shape)
            meta[".offset"] = offset
            meta[".len"] = len(block)
            meta[".type"] = ds_type(values.dtype)
            meta[".missing"] = missing
            meta[".endian"] = endian
            header[escape(name)] = meta
            blocks.append(block)
            offset += len(block)
        header["."] = {a: attr_value(f.getncattr(a)) for a in f.ncattrs()}
    with open(dst, "wb") as out:
        out.write(b"ds-1.0\n" + json.dumps(header).encode("utf-8") + b"\n")
        for b in blocks:
            out.write(b)


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    try:
        main(sys.argv[1], sys.argv[2])
    except NoReference as e:
        print("no reference output:", e, file=sys.stderr)
        sys.exit(3)
