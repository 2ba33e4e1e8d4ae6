// Zarr v2 `order: "F"`: a chunk's elements stored column-major (the first
// index fastest). Chunks are turned into C order once, when decoded, so that
// everything after the codec chain sees one layout.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ncafs::zarr {

// The elements of a column-major chunk of shape `chunks` (item bytes each)
// in row-major order. in.size() must be the product of chunks times item.
std::vector<uint8_t> fortran_to_c_order(std::span<const uint8_t> in, const std::vector<uint64_t>& chunks, size_t item);

}  // namespace ncafs::zarr
