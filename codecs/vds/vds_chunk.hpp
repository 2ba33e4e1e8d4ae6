// One chunk of a layer: its status from the 8-byte hash (openvds-notes.md
// §2.7: unwritten, all NoValue, constant float32, or stored data) and the
// decoding of a stored object (§2.8: the 24-byte DataBlockDescriptor, then
// None, RLE or Zip payload). The descriptor must agree with the geometry;
// every run and size is checked. Throws FormatError naming layer and chunk.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codecs/vds/vds_layout.hpp"

namespace ncafs::vds {

enum class Compression { None = 0, Wavelet = 1, Rle = 2, Zip = 3 };

struct ChunkStatus {
    enum class Kind { Unwritten, NoValue, Constant, Data } kind = Kind::Unwritten;
    float constant = 0;  // Kind::Constant
};
ChunkStatus status_of_hash(uint64_t hash);

// What a stored chunk must look like.
struct ChunkShape {
    int dimensionality = 3;        // 2 for tiles, 3 for bricks
    int64_t size[3] = {1, 1, 1};   // stored samples per group dim (fastest first)
    Format format = Format::R32;
};

// Bytes per decoded element: 1-bit samples are expanded to one byte 0/1.
size_t decoded_element_size(Format f);

// A decoded chunk larger than this is refused rather than allocated: the
// geometry of a hostile layout can ask for terabytes (4096^3 bricks).
constexpr uint64_t kMaxChunkBytes = 512ull << 20;
// Bytes of a chunk's packed samples (the payload once decompressed).
uint64_t payload_bytes(const ChunkShape& shape);
// The largest stored object a chunk of this shape may have: exactly the
// descriptor and the samples uncompressed; RLE and Zip at most twice the
// samples plus headers (their worst case is below that). Larger objects are
// refused before they are read.
uint64_t max_object_bytes(const ChunkShape& shape, Compression method);

// Decodes a stored object to size[0]*size[1]*size[2] native elements.
// where: "FILE: layer L chunk C" for messages; object_offset: for FormatError.
std::vector<uint8_t> decode_chunk(std::span<const uint8_t> object, Compression method, const ChunkShape& shape,
                                  const std::string& file, uint64_t object_offset, const std::string& where);

}  // namespace ncafs::vds
