// The chunk grid of one array of the `.zarr` view. Every chunk is one run of
// the variable's C-order values (so that the mount's read path splices it
// from a classic file where it lies there, as it does for the `.nc` view):
// the inner dimensions are whole, one dimension k is cut into c_k indices,
// the dimensions before k are one index a chunk. The rule:
//  - a scalar: one chunk;
//  - a coordinate variable of up to 1 MiB: one chunk;
//  - a record variable (first dimension unlimited): one record a chunk (a
//    record of a classic file is one run), cut further past 64 MiB;
//  - otherwise whole dimensions from the innermost while the chunk stays
//    within 64 MiB, then as many indices of the next as fit.
// No chunk exceeds kMaxZarrChunkBytes unless one element of the innermost
// dimensions does (an element is at most 8 bytes). A netCDF-4 variable
// whose chunks are handed out as the file stores them has the file's grid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncafs::agg::zarr_view {

inline constexpr uint64_t kMaxZarrChunkBytes = uint64_t{64} << 20;
inline constexpr uint64_t kWholeCoordinateBytes = uint64_t{1} << 20;

struct ZarrGrid {
    std::vector<uint64_t> shape, chunk;
    std::vector<uint64_t> per_dim;  // chunks along each dimension (0 along an empty one)
    uint64_t chunk_count = 0;       // product of per_dim (1 for a scalar)
    uint64_t element_size = 0;
    uint64_t chunk_bytes() const;   // element_size times the chunk's elements

    // The first element (C order over shape) and the number of elements of
    // chunk `index` (C order over per_dim) that lie inside the array; the
    // rest of the chunk is padding.
    struct Run {
        uint64_t first = 0, count = 0;
    };
    Run run_of(uint64_t index) const;
    // The box of chunk `index` inside the array (edge chunks clipped).
    void box_of(uint64_t index, std::vector<uint64_t>& start, std::vector<uint64_t>& count) const;
    // "i.j.k" of chunk `index` ("0" for a scalar).
    std::string key_of(uint64_t index) const;
    // The index of a key as key_of writes it (decimal, no leading zeros, one
    // number per dimension, each inside the grid); -1 otherwise.
    int64_t index_of(const std::string& key) const;
};

// record: the variable's first dimension is the unlimited one;
// coordinate: a 1-D variable named after its dimension.
ZarrGrid choose_zarr_grid(const std::vector<uint64_t>& shape, uint64_t element_size, bool record, bool coordinate);

// The grid of a given chunk shape (a file's own chunks: zarr_store_layout.hpp);
// throws UsageError past 2^53 chunks.
ZarrGrid zarr_grid_of(const std::vector<uint64_t>& shape, const std::vector<uint64_t>& chunk, uint64_t element_size);

}  // namespace ncafs::agg::zarr_view
