"""A small, independent writer of OpenVDS single-file containers (.vds),
written from openvds-notes.md (§2.2 layout JSON, §2.4 layer names, §2.5 chunk
geometry, §2.7 hashes, §2.8 chunk serialisation None/Zip, §2.10 container).
It covers what the OpenVDS-written fixtures do not: U8 with useNoValue, 1-bit
channels, a second channel, metadata entries. Arrays are numpy arrays in VDS
order reversed (C order, VDS dimension 0 last), as the reader shows them.
"""
import json
import struct
import zlib

import numpy as np

FORMATS = {"1Bit": (0, None), "U8": (1, "<u1"), "U16": (2, "<u2"), "R32": (3, "<f4"), "U32": (4, "<u4"),
           "R64": (5, "<f8"), "U64": (6, "<u8")}
COMPRESSION = {"None": 0, "Zip": 3}


def geometry(n, group, dim, lod, brick, nm, pm, mult):
    """(stride, nChunks, margins) of VDS dim `dim` (notes §2.5)."""
    inside = dim in group
    internal = (brick - nm - pm) * (mult if len(group) == 2 else 1) if inside else 1
    m0, m1 = (nm, pm) if inside else (0, 0)
    stride = min(internal << lod, n) if inside else 1  # outside the group: one chunk per sample at every LOD
    chunks = max(int((n - 1 - m0 - m1) / stride) + 1, 1)
    return stride, chunks, m0, m1


def chunk_payload(lod_array, fmt, ranges):
    """The stored samples of one chunk, X (VDS dim 0) fastest."""
    block = lod_array[tuple(slice(a, b) for a, b in reversed(ranges))]
    if fmt == "1Bit":
        rows = block.reshape(-1, block.shape[-1]).astype(np.uint8)
        return np.packbits(rows, axis=1, bitorder="little").tobytes()
    return np.ascontiguousarray(block.astype(FORMATS[fmt][1])).tobytes()


def layer_chunks(array, fmt, group, lod, brick, nm, pm, mult, compression, constant_of):
    """[(hash, object bytes)] of one layer; array is LOD0 in C order."""
    rank = array.ndim
    ns = [array.shape[rank - 1 - d] for d in range(rank)]
    # LOD n chunks are decimated along the group only: a chunk outside the
    # group holds the slice of its own LOD0 sample (as OpenVDS writes them).
    lod_array = array[tuple(slice(None, None, 1 << lod) if rank - 1 - k in group else slice(None)
                            for k in range(rank))]
    geo = [geometry(ns[d], group, d, lod, brick, nm, pm, mult) for d in range(rank)]
    out = []
    total = int(np.prod([g[1] for g in geo]))
    for index in range(total):
        idx, rest = [], index
        for d in range(rank):
            idx.append(rest % geo[d][1])
            rest //= geo[d][1]
        ranges, sizes = [], []
        for d in range(rank):
            stride, _, m0, m1 = geo[d]
            lo, hi = idx[d] * stride, min((idx[d] + 1) * stride + m0 + m1, ns[d])
            shift = lod if d in group else 0
            stored = ((hi - lo - 1) >> shift) + 1
            ranges.append((lo >> shift, (lo >> shift) + stored))
            sizes.append(stored)
        block = lod_array[tuple(slice(a, b) for a, b in reversed(ranges))]
        constant = constant_of(block)
        if constant == "novalue":
            out.append((0xFFFFFFFFFFFFFFFF, b""))
            continue
        if constant is not None:
            out.append((struct.unpack("<Q", struct.pack("<f", constant) + b"\x01\x01\x01\x01")[0], b""))
            continue
        group_sizes = [sizes[d] for d in group] + [1] * (3 - len(group))
        descriptor = struct.pack("<6i", len(group), *group_sizes, FORMATS[fmt][0], 1)
        payload = chunk_payload(lod_array, fmt, ranges)
        if compression == "Zip":
            payload = zlib.compress(payload, 6)
        out.append((0x1234567890ABCDEF + 7919 * index + 104729 * lod, descriptor + payload))
    return out


def write_container(path, files):
    """files: [(name, fourcc, file_metadata bytes, [(hash, object)] , page_entries, metadata_length)]."""
    body = bytearray(b"\0" * 32)
    name_length = 64
    headers = []
    for name, fourcc, file_metadata, chunks, page_entries, md_length in files:
        entries = []
        for h, obj in chunks:
            offset = len(body) if obj else 0
            body += obj
            entries.append(struct.pack("<qii", offset, len(obj), 0) + struct.pack("<Q", h)[:md_length].ljust(md_length, b"\0"))
        pages = []
        for p in range(0, len(entries), page_entries):
            page = b"".join(entries[p:p + page_entries])
            page = page.ljust(page_entries * (16 + md_length), b"\0")
            pages.append(len(body))
            body += page
        directory = len(body)
        body += struct.pack("<qii", 0, 0, 0) + file_metadata + struct.pack("<%dq" % len(pages), *pages)
        headers.append(struct.pack("<qiii4sii", directory, len(chunks), 0, page_entries, fourcc, md_length,
                                   len(file_metadata)) + name.encode().ljust(name_length, b"\0"))
    table = len(body)
    for h in headers:
        body += h
    body[0:32] = b"HueDataStore" + struct.pack("<iqii", 0x00010000, table, len(headers), name_length)
    with open(path, "wb") as f:
        f.write(bytes(body))


def write_vds(path, layout, channels, page_entries=1024):
    """layout: the VolumeDataLayout dict; channels: [(channel dict, array, group, compression, constant_of)];
    page_entries: chunk entries per index page (small ones make small files, e.g. fuzz seeds)."""
    desc = layout["layoutDescriptor"]
    brick = int(desc["brickSize"].split("_")[1])
    lods = 0 if desc["lodLevels"] == "LODLevels_None" else int(desc["lodLevels"].split("_")[1])
    text = json.dumps(layout, indent=4, sort_keys=True).encode()
    files = [("VolumeDataLayout", b"JSON", b"", [(1, text)], 1, 0)]
    for i, (channel, array, group, compression, constant_of) in enumerate(channels):
        prefix = "" if i == 0 else channel["name"]
        for lod in range(lods + 1):
            chunks = layer_chunks(array, channel["format"].split("_")[1], group, lod, brick, desc["negativeMargin"],
                                  desc["positiveMargin"], desc["brickSize2DMultiplier"], compression, constant_of)
            name = "%sDimensions_%sLOD%d" % (prefix, "".join(str(d) for d in group), lod)
            metadata = struct.pack("<ifi", COMPRESSION[compression], 0.0, len(chunks))
            files.append((name, b"VDS ", metadata, chunks, page_entries, 8))
    write_container(path, files)
