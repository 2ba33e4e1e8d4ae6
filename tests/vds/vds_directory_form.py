"""Rewrites an OpenVDS single-file container (.vds, "HueDataStore") as the
object-store directory form (openvds-notes.md section 2.9): VolumeDataLayout,
LayerStatus, <layer>/<chunk> objects and raw hash pages
<layer>/ChunkMetadata/<page>. Written from the notes' container layout
(section 2.10), independently of the C++ reader; the same walk as the C++
test helper tests/vds/vds_test_support.cpp.
"""
import json
import os
import struct

COMPRESSION_NAMES = {0: "None", 1: "Wavelet", 2: "RLE", 3: "Zip"}


def _files(b):
    """(name, directory offset, chunk count, page entries, metadata length, file metadata length) per file."""
    table, count, name_length = struct.unpack_from("<qii", b, 16)
    for i in range(count):
        at = table + i * (32 + name_length)
        directory, chunks, _, entries, _, md_length, fmd_length = struct.unpack_from("<qiii4sii", b, at)
        name = b[at + 32:at + 32 + name_length].split(b"\0")[0].decode()
        yield name, directory, chunks, entries, md_length, fmd_length


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def container_to_directory(container, folder, page_size=4):
    """Writes folder/...; returns the LayerStatus list (for tests that tweak it)."""
    with open(container, "rb") as f:
        b = f.read()
    status = []
    for name, directory, chunks, entries, md_length, fmd_length in _files(b):
        def entry_at(c):
            page = struct.unpack_from("<q", b, directory + 16 + fmd_length + (c // entries) * 8)[0]
            return page + (c % entries) * (16 + md_length)
        if name == "VolumeDataLayout":
            offset, length = struct.unpack_from("<qi", b, entry_at(0))
            _write(os.path.join(folder, name), b[offset:offset + length])
            continue
        hashes = bytearray(((chunks + page_size - 1) // page_size) * page_size * 8)
        for c in range(chunks):
            e = entry_at(c)
            offset, length = struct.unpack_from("<qi", b, e)
            hashes[c * 8:c * 8 + 8] = b[e + 16:e + 24]
            if length:
                _write(os.path.join(folder, name, str(c)), b[offset:offset + length])
        pages = (chunks + page_size - 1) // page_size
        for p in range(pages):
            _write(os.path.join(folder, name, "ChunkMetadata", str(p)), bytes(hashes[p * page_size * 8:(p + 1) * page_size * 8]))
        compression = struct.unpack_from("<i", b, directory + 16)[0]
        status.append({"layerName": name, "compressionMethod": COMPRESSION_NAMES[compression], "chunkCount": chunks,
                       "chunkMetadataPageSize": page_size, "chunkMetadataByteSize": 8, "hasChunkMetadataPages": True,
                       "pageDirectory": list(range(pages)), "produceStatus": "Normal"})
    with open(os.path.join(folder, "LayerStatus"), "w") as f:
        json.dump(status, f, indent=4)
    return status
