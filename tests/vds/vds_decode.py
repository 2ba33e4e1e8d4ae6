#!/usr/bin/env python3
"""An independent decoder of OpenVDS single-file containers (.vds), written
from openvds-notes.md with numpy and zlib only (none of our C++): the
HueDataStore container (§2.10), the layout JSON (§2.2), layer names (§2.4),
chunk geometry (§2.5), LOD sizes (§2.6), page tables and hashes (§2.7) and the
None/RLE/Zip chunk payloads (§2.8). Wavelet is not decoded.

Arrays come back in C order with VDS dimension 0 LAST (the netCDF order).

    python3 vds_decode.py FILE.vds            # layout summary, sha1 of every LOD
    python3 vds_decode.py FILE.vds --chunks   # also every page entry
"""
import hashlib
import json
import struct
import sys
import zlib

import numpy as np

FORMAT_DTYPES = {"Format_U8": "<u1", "Format_U16": "<u2", "Format_R32": "<f4", "Format_U32": "<u4",
                 "Format_R64": "<f8", "Format_U64": "<u8"}
FORMAT_CODES = {"Format_1Bit": 0, "Format_U8": 1, "Format_U16": 2, "Format_R32": 3, "Format_U32": 4,
                "Format_R64": 5, "Format_U64": 6}
COMPRESSION_NAMES = {0: "None", 1: "Wavelet", 2: "RLE", 3: "Zip", 4: "WaveletNormalizeBlock",
                     5: "WaveletLossless", 6: "WaveletNormalizeBlockLossless"}
NOVALUE_HASH = 0xFFFFFFFFFFFFFFFF
CONSTANT_TAG = 0x01010101


class VdsError(Exception):
    pass


class Entry:
    """One index-page entry: where a chunk lies and its 64-bit hash."""

    def __init__(self, offset, length, metadata):
        self.offset, self.length, self.metadata = offset, length, metadata
        self.hash = struct.unpack("<Q", metadata[:8])[0] if len(metadata) >= 8 else None

    def kind(self):
        if self.hash == 0:
            return "unwritten"
        if self.hash == NOVALUE_HASH:
            return "novalue"
        if self.hash is not None and self.hash >> 32 == CONSTANT_TAG:
            return "constant"
        return "data"

    def constant(self):
        return struct.unpack("<f", struct.pack("<I", self.hash & 0xFFFFFFFF))[0]


class ContainerFile:
    def __init__(self, name, fourcc, file_metadata, entries):
        self.name, self.fourcc, self.file_metadata, self.entries = name, fourcc, file_metadata, entries


def _unpack(data, fmt, offset, what):
    size = struct.calcsize(fmt)
    if offset < 0 or offset + size > len(data):
        raise VdsError("%s at %d runs past the end of the file (%d bytes)" % (what, offset, len(data)))
    return struct.unpack_from(fmt, data, offset)


def _read_file(data, header_offset, name_length):
    """One FileTable row: its page directory, file metadata and index pages (§2.10)."""
    directory, count, _rev, per_page, fourcc, md_len, fmd_len = _unpack(data, "<qiii4sii", header_offset,
                                                                         "file header")
    name = data[header_offset + 32:header_offset + 32 + name_length].split(b"\0")[0].decode()
    if count < 0 or per_page <= 0 or md_len < 0 or fmd_len < 0:
        raise VdsError("file %s: bad counts" % name)
    _unpack(data, "<qii", directory, "page directory of " + name)
    file_metadata = data[directory + 16:directory + 16 + fmd_len]
    pages = (count + per_page - 1) // per_page
    page_offsets = _unpack(data, "<%dq" % pages, directory + 16 + fmd_len, "page offsets of " + name)
    entry_size = 16 + md_len
    entries = []
    for c in range(count):
        page = page_offsets[c // per_page]
        if page == 0:
            entries.append(Entry(0, 0, b"\0" * md_len))
            continue
        at = page + (c % per_page) * entry_size
        offset, length, _reserved = _unpack(data, "<qii", at, "index entry %d of %s" % (c, name))
        entries.append(Entry(offset, length, data[at + 16:at + entry_size]))
    return ContainerFile(name, fourcc.decode("latin-1"), file_metadata, entries)


def read_container(data):
    """{name: ContainerFile} of a HueDataStore container."""
    magic, version, table, count, name_length = _unpack(data, "<12siqii", 0, "DataStoreHeader")
    if magic != b"HueDataStore":
        raise VdsError("not a HueDataStore container (magic %r)" % magic)
    if version != 0x00010000 or count < 0 or name_length <= 0 or name_length % 8:
        raise VdsError("unsupported container header")
    files = {}
    for i in range(count):
        f = _read_file(data, table + i * (32 + name_length), name_length)
        files[f.name] = f
    return files


def chunk_bytes(data, entry):
    if entry.offset <= 0 or entry.offset + entry.length > len(data):
        raise VdsError("chunk at %d+%d lies outside the file" % (entry.offset, entry.length))
    return data[entry.offset:entry.offset + entry.length]


def rle_decode(buf, unit):
    """§2.8 RLE: 12-byte header then runs."""
    compressed, original, unit_size = struct.unpack_from("<3i", buf, 0)
    if unit_size != unit or compressed > len(buf):
        raise VdsError("RLE header disagrees (unit %d, size %d)" % (unit_size, compressed))
    out, at = bytearray(), 12
    while len(out) < original:
        u0 = buf[at]
        at += 1
        length = u0 & 0x3F
        if u0 & 0x80:
            length |= buf[at] << 6
            at += 1
        length += 1
        if u0 & 0x40:
            out += buf[at:at + length * unit]
            at += length * unit
        else:
            out += buf[at:at + unit] * length
            at += unit
    if len(out) != original:
        raise VdsError("RLE decoded %d bytes, expected %d" % (len(out), original))
    return bytes(out)


def axis_geometry(n, in_group, group_rank, lod, brick, nm, pm, multiplier):
    """(stride, chunk count, margin lo, margin hi, LOD shift) in LOD0 units (§2.5).
    A dim outside the dimension group has bricks of one sample at every LOD
    (nChunks = N), each holding its LOD0 sample's slice (shift 0); it is still
    read every 2**lod-th sample (see read_lod)."""
    if not in_group:
        return 1, n, 0, 0, 0
    internal = (brick - nm - pm) * (multiplier if group_rank == 2 else 1)
    stride = min(internal << lod, n)
    chunks = max(int((n - 1 - nm - pm) / stride) + 1, 1)
    return stride, chunks, nm, pm, lod


class Vds:
    """A decoded container: layout JSON, layers and their entries."""

    def __init__(self, path_or_bytes):
        if isinstance(path_or_bytes, (bytes, bytearray)):
            self.data = bytes(path_or_bytes)
        else:
            with open(path_or_bytes, "rb") as f:
                self.data = f.read()
        self.files = read_container(self.data)
        layout_file = self.files.get("VolumeDataLayout")
        if layout_file is None or layout_file.fourcc != "JSON" or not layout_file.entries:
            raise VdsError("no VolumeDataLayout JSON file")
        self.layout = json.loads(chunk_bytes(self.data, layout_file.entries[0]))
        desc = self.layout["layoutDescriptor"]
        self.brick = int(desc["brickSize"].split("_")[1])  # "BrickSize_64": samples incl. margins
        self.nm, self.pm = int(desc["negativeMargin"]), int(desc["positiveMargin"])
        self.multiplier = int(desc.get("brickSize2DMultiplier", 4))
        levels = desc["lodLevels"]
        self.lod_levels = 0 if levels == "LODLevels_None" else int(levels.split("_")[1])
        self.axes = self.layout["axisDescriptors"]
        self.channels = self.layout["channelDescriptors"]
        self.shape = [int(a["numSamples"]) for a in self.axes]  # VDS order, dim 0 first

    # -- layers -------------------------------------------------------------
    def primary_group(self):
        """The dimension group of the primary channel's LOD0 layer (§2.4)."""
        for name in self.files:
            if name.startswith("Dimensions_") and name.endswith("LOD0"):
                return name[len("Dimensions_"):-len("LOD0")]
        raise VdsError("no primary LOD0 layer")

    def layer_name(self, channel, lod):
        prefix = "" if channel == 0 else self.channels[channel]["name"]
        return "%sDimensions_%sLOD%d" % (prefix, self.primary_group(), lod)

    def layer(self, channel, lod):
        name = self.layer_name(channel, lod)
        if name not in self.files:
            raise VdsError("layer %s is not stored" % name)
        return self.files[name]

    def compression(self, channel, lod):
        fmd = self.layer(channel, lod).file_metadata
        return COMPRESSION_NAMES.get(struct.unpack_from("<i", fmd, 0)[0], "unknown")

    def geometry(self, lod):
        group = [int(c) for c in self.primary_group()]
        return [axis_geometry(self.shape[d], d in group, len(group), lod, self.brick, self.nm, self.pm,
                              self.multiplier) for d in range(len(self.shape))], group

    def chunk_count(self, lod):
        geo, _ = self.geometry(lod)
        return int(np.prod([g[1] for g in geo]))

    def chunk_kinds(self, channel=0, lod=0):
        """[(kind, offset, length)] of every chunk of a layer, in chunk-index order."""
        return [(e.kind(), e.offset, e.length) for e in self.layer(channel, lod).entries]

    # -- values -------------------------------------------------------------
    def full_resolution_dimension(self):
        desc = self.layout["layoutDescriptor"]
        return int(desc.get("fullResolutionDimension", -1)) if desc.get("forceFullResolutionDimension") else -1

    def read_shift(self, lod, d):
        """LOD shift of dim d as OpenVDS's VolumeDataAccess reads a layer: every
        dim but the forced full-resolution one, inside the group or not (§2.6)."""
        return 0 if d == self.full_resolution_dimension() else lod

    def lod_shape(self, lod):
        return [((n - 1) >> self.read_shift(lod, d)) + 1 for d, n in enumerate(self.shape)]

    def _fill(self, channel, value_kind, entry):
        """The raw (stored) value of a chunk without bytes."""
        ch = self.channels[channel]
        dtype = np.dtype(FORMAT_DTYPES[ch["format"]])
        quantized = dtype.kind == "u" and dtype.itemsize <= 2
        if value_kind == "constant":
            v = np.float32(entry.constant())
            if quantized:
                scale, offset = np.float32(ch.get("integerScale", 1)), np.float32(ch.get("integerOffset", 0))
                return dtype.type(np.rint((np.float64(v) - offset) / scale))
            return dtype.type(v)
        use_novalue = ch.get("useNoValue", False)
        if not use_novalue:
            return dtype.type(0)
        if quantized:
            return dtype.type(np.iinfo(dtype).max)
        return dtype.type(ch.get("noValue", 0))

    def _chunk_array(self, channel, lod, entry, sizes, group):
        ch = self.channels[channel]
        dtype = np.dtype(FORMAT_DTYPES[ch["format"]])
        kind = entry.kind()
        if kind != "data":
            return np.full(list(reversed(sizes)), self._fill(channel, kind, entry), dtype=dtype)
        obj = chunk_bytes(self.data, entry)
        dims, sx, sy, sz, fmt, comps = struct.unpack_from("<6i", obj, 0)
        want = [sizes[d] for d in group] + [1] * (3 - len(group))
        if [sx, sy, sz] != want or dims != len(group) or fmt != FORMAT_CODES[ch["format"]] or comps != 1:
            raise VdsError("chunk descriptor %r disagrees with geometry %r" % ((dims, sx, sy, sz, fmt), want))
        payload = obj[24:]
        method = self.compression(channel, lod)
        if method == "Zip":
            payload = zlib.decompress(payload)
        elif method == "RLE":
            payload = rle_decode(payload, dtype.itemsize)
        elif method != "None":
            raise VdsError("compression %s is not decoded" % method)
        count = int(np.prod(sizes))
        if len(payload) != count * dtype.itemsize:
            raise VdsError("chunk payload has %d bytes, expected %d" % (len(payload), count * dtype.itemsize))
        return np.frombuffer(payload, dtype=dtype).reshape(list(reversed(sizes)))

    def read_lod(self, channel=0, lod=0):
        """The stored values of one LOD (raw codes), C order, VDS dim 0 last."""
        geo, group = self.geometry(lod)
        rank = len(self.shape)
        dtype = np.dtype(FORMAT_DTYPES[self.channels[channel]["format"]])
        out = np.zeros(list(reversed(self.lod_shape(lod))), dtype=dtype)
        entries = self.layer(channel, lod).entries
        if len(entries) != self.chunk_count(lod):
            raise VdsError("layer has %d chunks, geometry says %d" % (len(entries), self.chunk_count(lod)))
        for index, entry in enumerate(entries):
            idx, rest = [], index
            for d in range(rank):
                idx.append(rest % geo[d][1])
                rest //= geo[d][1]
            sizes, src, dst = [], [], []
            for d in range(rank):
                stride, count, m0, m1, shift = geo[d]
                n = self.shape[d]
                lo, hi = idx[d] * stride, min((idx[d] + 1) * stride + m0 + m1, n)
                sizes.append(((hi - lo - 1) >> shift) + 1)
                vlo = 0 if idx[d] == 0 else lo + m0
                vhi = n if idx[d] == count - 1 else min((idx[d] + 1) * stride + m0, n)
                step = 1 << self.read_shift(lod, d)
                a, b = -(-vlo // step), -(-vhi // step)  # samples read whose LOD0 position is valid here
                if d in group:
                    src.append(slice(a - (lo >> shift), b - (lo >> shift)))
                else:  # one LOD0 sample: read only when it is a multiple of the step
                    src.append(slice(0, b - a))
                dst.append(slice(a, b))
            if any(s.start == s.stop for s in dst):
                continue
            block = self._chunk_array(channel, lod, entry, sizes, group)
            out[tuple(reversed(dst))] = block[tuple(reversed(src))]
        return out

    def read_values(self, channel=0, lod=0):
        """float64 values: U8/U16 dequantised in float32 arithmetic, NoValue -> NaN."""
        ch = self.channels[channel]
        raw = self.read_lod(channel, lod)
        if raw.dtype.kind == "u" and raw.dtype.itemsize <= 2:
            scale, offset = np.float32(ch.get("integerScale", 1)), np.float32(ch.get("integerOffset", 0))
            values = (offset + scale * raw.astype(np.float32)).astype(np.float64)
            novalue = raw == np.iinfo(raw.dtype).max
        else:
            values = raw.astype(np.float64)
            novalue = raw == raw.dtype.type(ch.get("noValue", 0))
        if ch.get("useNoValue", False):
            values[novalue] = np.nan
        return values


def sha1(array):
    return hashlib.sha1(np.ascontiguousarray(array).tobytes()).hexdigest()


def f64_sha1(values):
    values = values.copy()
    bits = values.view(np.uint64)
    bits[np.isnan(values)] = 0x7FF8000000000000
    return sha1(values)


def main(argv):
    vds = Vds(argv[1])
    print(json.dumps(vds.layout["layoutDescriptor"], sort_keys=True))
    for c, ch in enumerate(vds.channels):
        for lod in range(vds.lod_levels + 1):
            kinds = vds.chunk_kinds(c, lod)
            summary = {k: sum(1 for e in kinds if e[0] == k) for k in sorted({e[0] for e in kinds})}
            print("%s LOD%d %s raw %s f64 %s %s" % (ch["name"], lod, vds.lod_shape(lod)[::-1],
                                                   sha1(vds.read_lod(c, lod)), f64_sha1(vds.read_values(c, lod)),
                                                   summary))
            if "--chunks" in argv:
                for i, k in enumerate(kinds):
                    print("  chunk %d %s offset %d length %d" % (i, *k))


if __name__ == "__main__":
    main(sys.argv)
