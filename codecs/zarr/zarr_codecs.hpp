// Decoding one stored Zarr v2 chunk through its codec chain (the compressor,
// then the filters in reverse), with Debian's libraries: zlib (zlib, gzip),
// libzstd, liblz4, libblosc (with its inner compressors and shuffles), and
// the shuffle, delta and fixedscaleoffset filters. Every stage's output size
// is known or bounded before it runs: a decompression bomb stops at the size
// the chunk must have, and a chunk that decodes to another size is an error.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codecs/zarr/zarr_array.hpp"

namespace ncafs::zarr {

bool is_supported_codec(std::string_view id);
// "zlib, gzip, zstd, lz4, blosc, shuffle, delta, fixedscaleoffset"
std::string supported_codec_names();

// The decoded chunk: exactly array.chunk_bytes bytes, elements in the
// dtype's byte order. Throws std::runtime_error with the reason.
// `max_intermediate`: the bound of a stage whose output size is not implied
// by the next stage (a compressor feeding another compressor).
std::vector<uint8_t> decode_chunk(std::span<const uint8_t> stored, const ZarrArray& array,
                                  uint64_t max_intermediate = uint64_t{256} << 20);

}  // namespace ncafs::zarr
