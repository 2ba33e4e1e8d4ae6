// Chunks of a .vds view made together: a batch is a run of consecutive
// chunk indices of one layer that forms a box (the fastest VDS dims whole,
// a range of chunks along the next one, the slower dims fixed), read from
// the variable's ArraySource with as few reads as its size allows (one at
// LOD0; at LOD n one per kept index of the slowest dims, the faster dims read
// as whole rows and decimated in memory), then copied out chunk by chunk.
// A brick alone would be read as 64-sample runs: one pread each from a
// classic file, a chunk decompressed again for each from a netCDF-4 one.
#pragma once

#include <cstdint>
#include <functional>

#include "codecs/vds/vds_lod_store.hpp"
#include "codecs/vds/vds_writer_chunks.hpp"

namespace ncafs::vds {

// Source samples a batch may hold (times the larger of the source and the
// stored sample size): the memory of one batch, and of its decimation scratch.
constexpr uint64_t kBatchBytes = uint64_t{8} << 20;

struct ChunkRange {
    uint64_t first = 0, end = 0;  // chunk indices [first, end) of one layer
};

// The batch holding `chunk`: at most `budget` bytes of samples of
// `sample_bytes` each (always at least the chunk itself). Batches tile the
// layer: every chunk of a batch has that same batch. `narrow` (for a reader
// that jumps: it may want one chunk of the batch) takes one chunk along the
// dim the budget cuts, keeping the faster dims whole (whole rows).
ChunkRange batch_of(const LayerGeometry& g, uint64_t chunk, uint64_t sample_bytes, uint64_t budget = kBatchBytes,
                    bool narrow = false);

// Bytes per sample a batch of this channel weighs (source or stored, the larger).
uint64_t batch_sample_bytes(const Channel& c, const WriterChannel& w);

// Where the object of a chunk goes (chunk_object_size bytes); nullptr: not wanted (a uniform chunk).
using ObjectDestination = std::function<uint8_t*(uint64_t chunk)>;

// The byte order the source reads in at least cost: Big when its first
// element lies big-endian in a file (a classic file, read without any
// swap), else Native. May open that file; a file that fails: Native.
ByteOrder cheap_order(const ArraySource& source);

// Reads the chunks of `range` from the channel's source in `order` (at LOD
// n >= 1 from `store` when it holds them) and writes the object of each
// wanted one, its samples swapped to native as they are copied; at LOD0
// keeps their samples in `store` (may be null; in `order`: every batch of a
// store must use the same) for the other LODs. Throws what the source throws.
void fill_batch(const Channel& c, const WriterChannel& w, const LayerGeometry& g, ChunkRange range,
                const ObjectDestination& object_of, LodStore* store = nullptr, ByteOrder order = ByteOrder::Native);

}  // namespace ncafs::vds
