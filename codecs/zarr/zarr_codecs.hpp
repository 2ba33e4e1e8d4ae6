// Decoding one stored Zarr v2 chunk through its codec chain (the compressor,
// then the filters in reverse), with Debian's libraries: zlib (zlib, gzip),
// libzstd, liblz4, libblosc (with its inner compressors and shuffles),
// libbz2 (bz2), liblzma (lzma), and the shuffle, delta and fixedscaleoffset
// filters; then an order "F" chunk is turned into C order. Every stage's
// output size is known or bounded before it runs: a decompression bomb
// stops at the size the chunk must have, and a chunk that decodes to
// another size is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codecs/zarr/zarr_array.hpp"

namespace ncafs::zarr {

bool is_supported_codec(std::string_view id);
// "zlib, gzip, zstd, lz4, blosc, bz2, lzma, shuffle, delta, fixedscaleoffset"
std::string supported_codec_names();
// Why a supported codec's configuration cannot be decoded (lzma: a raw
// stream or a filter chain), or nullopt.
std::optional<std::string> codec_refusal(const ZarrCodec& codec);

// The most bytes an encoded chunk of the array may hold: its decoded size,
// an eighth more and 1 MiB (no codec here expands data by more). Also the
// bound of a stage whose output size the next stage does not imply (a
// compressor feeding another compressor).
uint64_t max_encoded_bytes(const ZarrArray& array);

// The decoded chunk: exactly array.chunk_bytes bytes, elements in the
// dtype's byte order. Throws std::runtime_error with the reason.
std::vector<uint8_t> decode_chunk(std::span<const uint8_t> stored, const ZarrArray& array);

}  // namespace ncafs::zarr
