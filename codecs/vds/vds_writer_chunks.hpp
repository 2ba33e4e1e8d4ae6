// The chunks of a .vds view (notes §2.5-§2.8, compression None): the LOD0
// box of a chunk, its hash when metadata alone shows it constant or NoValue
// (ArraySource::uniform_value, no file opened), and otherwise the size of
// its object (a DataBlockDescriptor and the raw samples, X fastest), which
// vds_writer_batch.hpp makes.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/vds/vds_geometry.hpp"
#include "codecs/vds/vds_writer_plan.hpp"

namespace ncafs::vds {

constexpr uint64_t kNoValueHash = ~uint64_t{0};
constexpr uint64_t kConstantTag = uint64_t{0x01010101} << 32;

struct ChunkBox {
    std::vector<int64_t> lo, hi;  // per VDS dim, LOD0 units, half-open
    std::vector<int64_t> stored;  // samples stored per VDS dim at the layer's LOD
};

ChunkBox chunk_box(const LayerGeometry& g, uint64_t index);
size_t format_size(Format f);
// U8/U16: codes with an offset; the top code is NoValue (§2.11).
inline bool quantized(Format f) { return f == Format::U8 || f == Format::U16; }
inline uint64_t top_code(Format f) { return f == Format::U8 ? 0xFF : 0xFFFF; }
// 24-byte descriptor + samples.
uint64_t chunk_object_size(Format f, const ChunkBox& box);

// The NoValue or constant hash of a chunk known uniform from metadata; nullopt: a data chunk.
std::optional<uint64_t> uniform_chunk_hash(const Channel& c, const WriterChannel& w, const ArraySource& src,
                                           const ChunkBox& box);

}  // namespace ncafs::vds
