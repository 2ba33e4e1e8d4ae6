// The decoders Zarr chunks and netCDF-4 (HDF5) chunks share: zlib/gzip
// inflate (libdeflate: whole buffers, about twice zlib's speed) that stops at the size the chunk must have (a decompression bomb
// costs no more memory than an honest chunk), and the byte shuffle of
// numcodecs and HDF5 (the same layout). Pure functions of their input: safe
// to run on any thread, without the netcdf-c mutex.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ncafs {

// Inflates a zlib stream (bytes after its end ignored, as zlib and HDF5 do)
// or gzip members (one after the other, zero padding between them allowed,
// as Python's gzip reads them) into at most `bound` bytes; with `exact`,
// anything but exactly `bound` bytes is an error. Throws std::runtime_error
// naming the reason ("zlib data decode to more than N bytes (the chunk's
// size): refused", "... are corrupt or truncated").
std::vector<uint8_t> inflate_bounded(std::span<const uint8_t> in, uint64_t bound, bool exact, bool gzip = false);

// The same into `out` (bound = out.size(), nothing zero-filled first): the
// number of bytes written.
size_t inflate_bounded_into(std::span<const uint8_t> in, std::span<uint8_t> out, bool exact, bool gzip = false);

// Undoes the byte shuffle: byte j of every element stored together, a tail
// that is not a whole element kept as it is. element_size > 0.
std::vector<uint8_t> unshuffle_bytes(std::span<const uint8_t> in, size_t element_size);

// The same into out[0, in.size()), which must not overlap `in`.
void unshuffle_bytes_into(std::span<const uint8_t> in, size_t element_size, uint8_t* out);

}  // namespace ncafs
