"""Zarr v3 sharded arrays (sharding_indexed) written here, byte by byte from
the specification: zarrita reads sharded arrays but cannot write them, so the
test writes them and has zarrita read them back (index at the end) before
ncafs does. crc32c is computed here too (checked against the standard vector)."""
import gzip
import json
import os
import struct

import numpy as np


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def write_node(folder, node):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "zarr.json"), "w") as f:
        json.dump(node, f)


def sharded_array(folder, values, shard, inner, fill, dims, index_at_end=True, big_endian=False, skip=()):
    """values: a float32 array; shards of `shard`, inner chunks of `inner`
    (gzip, a crc32c on each chunk when big_endian), the inner chunks whose
    index (in the whole array) is in `skip` left unwritten."""
    endian = "big" if big_endian else "little"
    inner_codecs = [{"name": "bytes", "configuration": {"endian": endian}}, {"name": "gzip", "configuration": {"level": 5}}]
    if big_endian:
        inner_codecs.append({"name": "crc32c"})
    index_codecs = [{"name": "bytes", "configuration": {"endian": endian}}, {"name": "crc32c"}]
    write_node(folder, {
        "zarr_format": 3, "node_type": "array", "shape": list(values.shape), "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner), "codecs": inner_codecs, "index_codecs": index_codecs,
            "index_location": "end" if index_at_end else "start"}}],
        "fill_value": fill, "dimension_names": list(dims), "attributes": {"units": "m"}})
    per = [s // c for s, c in zip(shard, inner)]
    grid = [-(-n // s) for n, s in zip(values.shape, shard)]
    for shard_index in np.ndindex(*grid):
        write_shard(folder, values, shard_index, shard, inner, per, fill, index_at_end, big_endian, skip)


def encode_chunk(values, start, inner, fill, big_endian):
    block = np.full(inner, fill, dtype="f4")
    part = values[tuple(slice(s, s + c) for s, c in zip(start, inner))]
    block[tuple(slice(0, n) for n in part.shape)] = part
    data = gzip.compress(block.astype(">f4" if big_endian else "<f4").tobytes())
    return data + struct.pack("<I", crc32c(data)) if big_endian else data


def write_shard(folder, values, shard_index, shard, inner, per, fill, index_at_end, big_endian, skip):
    n = int(np.prod(per))
    index = [(2 ** 64 - 1, 2 ** 64 - 1)] * n
    index_bytes = 16 * n + 4
    body = b""
    base = 0 if index_at_end else index_bytes
    for local in np.ndindex(*per):
        chunk = tuple(s * p + l for s, p, l in zip(shard_index, per, local))
        start = [c * i for c, i in zip(chunk, inner)]
        if chunk in skip or any(s >= d for s, d in zip(start, values.shape)):
            continue
        data = encode_chunk(values, start, inner, fill, big_endian)
        index[int(np.ravel_multi_index(local, per))] = (base + len(body), len(data))
        body += data
    fmt = (">" if big_endian else "<") + "Q" * (2 * n)
    raw = struct.pack(fmt, *[v for pair in index for v in pair])
    raw += struct.pack("<I", crc32c(raw))
    path = os.path.join(folder, "c", *[str(i) for i in shard_index])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(body + raw if index_at_end else raw + body)
