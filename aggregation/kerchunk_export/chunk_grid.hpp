// The one regular chunk grid of a Zarr array, chosen so that as many pieces
// as possible are referenced as they are:
//  - HDF5-chunked pieces: their chunk shape, filters and byte order (all
//    must agree, and every piece must start on a chunk boundary and end on
//    one or at the master's edge);
//  - runs (classic, contiguous HDF5): chunks that divide every fragment
//    boundary (gcd per dimension), whole along the inner dimensions where
//    every fragment is whole, one row of the outer ones, split further when
//    a chunk would span records or exceed kMaxChunkBytes;
//  - otherwise (values inline only): rows of the first dimension, at most
//    kMaxChunkBytes a chunk, little-endian, no codecs.
// A piece that does not fit the grid becomes inline, saying why.
#pragma once

#include <cstdint>
#include <vector>

#include "aggregation/kerchunk_export/chunk_codecs.hpp"
#include "aggregation/kerchunk_export/piece.hpp"

namespace ncafs::agg::kerchunk {

inline constexpr uint64_t kMaxChunkBytes = uint64_t{64} << 20;

struct ChunkGrid {
    std::vector<uint64_t> chunk;
    std::vector<ZarrCodec> filters;  // Zarr `filters`, encode order; no compressor
    bool big_endian = false;
};

struct Box {
    std::vector<uint64_t> start, count;
};

// shape: the master's; boxes: every fragment's box (referenced or not): the
// chunks of runs do not straddle their boundaries.
ChunkGrid choose_grid(const std::vector<uint64_t>& shape, uint64_t element_size, const std::vector<Piece*>& pieces,
                      const std::vector<Box>& boxes);

// Number of chunks of the grid along each dimension (at least 1 chunk
// extent, 0 chunks along an empty dimension).
std::vector<uint64_t> chunks_per_dim(const std::vector<uint64_t>& shape, const std::vector<uint64_t>& chunk);

}  // namespace ncafs::agg::kerchunk
