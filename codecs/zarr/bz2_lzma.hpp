// The numcodecs BZ2 and LZMA compressors' decoders, with Debian's libbz2 and
// liblzma. Both stop at the size the chunk must have: a decompression bomb
// costs no more memory than an honest chunk, and it is refused as soon as it
// would pass that size. Streams may follow one another (as Python's bz2 and
// lzma modules read them); a truncated stream is an error.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ncafs::zarr {

// The most memory liblzma may take for one stream's dictionary: the presets
// need at most 65 MiB (xz -9e); a header asking for more is refused.
inline constexpr uint64_t kLzmaMemoryLimit = uint64_t{128} << 20;

// numcodecs LZMA `format`: 0 auto, 1 xz, 2 alone (.lzma); 3 (raw, with its
// filter chain in the configuration) is refused by the caller.
enum class LzmaFormat { Auto = 0, Xz = 1, Alone = 2 };

// Decodes into at most `bound` bytes; with `exact`, anything but exactly
// `bound` bytes is an error. Throws std::runtime_error with the reason
// ("bz2 data decode to more than N bytes (the chunk's size): refused",
// "... are truncated", "... are corrupt").
std::vector<uint8_t> bz2_bounded(std::span<const uint8_t> in, uint64_t bound, bool exact);
std::vector<uint8_t> lzma_bounded(std::span<const uint8_t> in, LzmaFormat format, uint64_t bound, bool exact);

}  // namespace ncafs::zarr
