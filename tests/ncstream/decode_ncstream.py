#!/usr/bin/python3
"""Independent ncstream decoder for the tests (Python, numpy, zlib).

It shares no code with the C++ codec: framing and varints are parsed here,
protobuf messages with classes that protoc generates from the schema at test
time (load_schema), payloads with numpy/zlib. Values are combined by section
into one numpy array per variable (later messages win, the rest stays at the
variable's _FillValue or 0).

    python3 decode_ncstream.py SCHEMA.proto WORKDIR FILE.ncs   # prints a summary
"""
import importlib
import os
import subprocess
import sys
import zlib

import numpy as np

MAGIC_START = bytes([0x43, 0x44, 0x46, 0x53])
MAGIC_HEADER = bytes([0xAD, 0xEC, 0xCE, 0xDA])
MAGIC_DATA = bytes([0xAB, 0xEC, 0xCE, 0xBA])
MAGIC_END = bytes([0xED, 0xED, 0xDE, 0xDE])

# ncstream DataType value -> numpy big-endian dtype string (CHAR: bytes).
DTYPES = {0: "S1", 1: ">i1", 2: ">i2", 3: ">i4", 4: ">i8", 5: ">f4", 6: ">f8",
          14: ">u1", 15: ">u2", 16: ">u4", 17: ">u8"}
# Attribute.Type (4.x) value -> numpy dtype; 0 = STRING.
OLD_ATT_DTYPES = {1: ">i1", 2: ">i2", 3: ">i4", 4: ">i8", 5: ">f4", 6: ">f8"}


def load_schema(proto_path, workdir):
    """protoc --python_out into workdir, then import the generated module."""
    proto_dir, proto_name = os.path.split(os.path.abspath(proto_path))
    os.makedirs(workdir, exist_ok=True)
    subprocess.run(["protoc", "-I", proto_dir, "--python_out", workdir, proto_name], check=True)
    sys.path.insert(0, workdir)
    return importlib.import_module(proto_name[:-len(".proto")] + "_pb2")


class DecodeError(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n, what):
        if n > len(self.data) - self.pos:
            raise DecodeError(f"{what}: {n} bytes at {self.pos} run past the end")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def varint(self, what):
        shift = value = 0
        while True:
            b = self.take(1, what)[0]
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value
            if shift > 63:
                raise DecodeError(f"{what}: varint too long")


class Decoded:
    def __init__(self):
        self.header = None          # pb.Header
        self.header_length = 0
        self.messages = []          # (pb.Data, payload bytes as stored, message start offset)
        self.arrays = {}            # variable name -> numpy array (big-endian dtypes / S1)
        self.size = 0


def unescape(name):
    out, i = [], 0
    while i < len(name):
        if name[i] == "\\" and i + 1 < len(name):
            i += 1
        out.append(name[i])
        i += 1
    return "".join(out)


def attribute_value(att):
    """(kind, value): ('text', str) or ('numbers', numpy array big-endian)."""
    if att.HasField("dataType") and att.dataType != 0:
        dt = att.dataType
    elif att.type != 0:
        dt = att.type  # BYTE..DOUBLE share numbers with DataType
    else:
        dt = 7 if len(att.sdata) else 0
    if dt == 7:
        if att.len != 1 or len(att.sdata) != 1:
            raise DecodeError(f"attribute {att.name}: text must be len=1 with one sdata")
        return "text", att.sdata[0]
    dtype = np.dtype(DTYPES[dt])
    arr = np.frombuffer(att.data, dtype=dtype)
    if arr.size != att.len:
        raise DecodeError(f"attribute {att.name}: len {att.len} but {arr.size} values")
    return "numbers", arr


def decode(path, pb):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    out = Decoded()
    out.size = len(data)
    if r.take(4, "start magic") != MAGIC_START:
        raise DecodeError("no MAGIC_START")
    if r.take(4, "header magic") != MAGIC_HEADER:
        raise DecodeError("no MAGIC_HEADER")
    n = r.varint("header length")
    out.header = pb.Header()
    out.header.ParseFromString(r.take(n, "header"))
    out.header_length = n
    variables = {v.name: v for v in out.header.root.vars}
    for name, v in variables.items():
        shape = tuple(d.length for d in v.shape)
        fill = 0
        for a in v.atts:
            if a.name == "_FillValue":
                fill = attribute_value(a)[1][0]
        dtype = np.dtype(DTYPES[v.dataType])
        out.arrays[name] = np.full(shape, b"\0" if dtype.kind == "S" else fill, dtype=dtype)
    while True:
        at = r.pos
        magic = r.take(4, "message magic")
        if magic == MAGIC_END:
            break
        if magic != MAGIC_DATA:
            raise DecodeError(f"unexpected magic {magic.hex()} at {at}")
        n = r.varint("data length")
        d = pb.Data()
        d.ParseFromString(r.take(n, "data message"))
        stored = r.take(r.varint("payload length"), "payload")
        out.messages.append((d, stored, at))
        name = unescape(d.varName)
        v = variables[name]
        arr = out.arrays[name]
        if d.compress == 1:  # DEFLATE: a zlib stream (wbits 15 refuses raw deflate and gzip)
            raw = zlib.decompress(stored)
            if d.HasField("uncompressedSize") and len(raw) != d.uncompressedSize:
                raise DecodeError(f"{name}: inflated {len(raw)} bytes, uncompressedSize {d.uncompressedSize}")
        else:
            raw = stored
        dtype = arr.dtype if d.bigend else arr.dtype.newbyteorder("<")
        box = tuple(slice(rg.start, rg.start + rg.size * (rg.stride or 1), rg.stride or 1) for rg in d.section.range)
        count = tuple(rg.size for rg in d.section.range)
        values = np.frombuffer(raw, dtype=dtype)
        if values.size != int(np.prod(count, dtype=np.int64)):
            raise DecodeError(f"{name}: {values.size} values for section {count}")
        arr[box] = values.reshape(count)
    if r.pos != len(data):
        raise DecodeError(f"{len(data) - r.pos} bytes after MAGIC_END")
    return out


def main():
    pb = load_schema(sys.argv[1], sys.argv[2])
    dec = decode(sys.argv[3], pb)
    print(f"location={dec.header.location!r} header={dec.header_length} bytes, {len(dec.messages)} data messages")
    for name, arr in dec.arrays.items():
        print(f"  {name} {arr.dtype} {arr.shape}: {arr.ravel()[:8]}")


if __name__ == "__main__":
    main()
