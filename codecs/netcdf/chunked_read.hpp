// Reading a deflated (filtered) netCDF-4 variable chunk by chunk: HDF5
// inflates whole chunks whatever box is asked, so each chunk a box touches is
// decoded once, whole, and kept in the DecodedChunkCache; the box is copied
// out of the decoded chunks. Where the filters allow (raw_chunks.hpp), only
// fetching a chunk's stored bytes holds the netcdf-c mutex: inflating runs
// outside it, the chunks of one box side by side. HDF5's own chunk cache of such a variable is
// switched off (it would keep a second copy, per variable and open file,
// outside cache_mem=). Other variables (contiguous, unfiltered, chunks too
// small to be worth an entry or too large for the bound) are read as before.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "codecs/netcdf/decoded_chunk_cache.hpp"

namespace ncafs::netcdf {

// Smaller chunks are left to HDF5: an entry per few elements would cost more
// in calls and bookkeeping than inflating them again.
constexpr uint64_t kSmallestCachedChunk = 4096;
// A key holds one coordinate per dimension: up to this rank its bytes stay
// within DecodedChunkCache::kEntryOverhead (netCDF allows 1024 dimensions).
constexpr size_t kLargestCachedRank = 16;

// The chunk lengths of a cached variable, each clipped to the variable's
// length (a declared chunk may exceed it), and a whole chunk's bytes.
struct ChunkLayout {
    std::vector<uint64_t> lengths;
    uint64_t bytes = 0;
};

// Whether variable varid of group ncid is read through the cache (netcdf-c
// mutex held): of rank 1 to kLargestCachedRank, chunked, filtered, with a
// chunk of kSmallestCachedChunk to cache.largest_entry() bytes, overhead
// included (computed with overflow checks: the chunk shape comes from the file). Switches HDF5's chunk cache of such a
// variable off; leaves every other variable untouched.
std::optional<ChunkLayout> cached_chunk_layout(int ncid, int varid, size_t element_size,
                                               const std::vector<uint64_t>& shape, const DecodedChunkCache& cache);

// Copies the part of one decoded chunk (origin chunk_start, extents
// chunk_count, C order) that lies in the box [start, start + count) to its
// place in out (C order over count).
void copy_box_overlap(const uint8_t* chunk, std::span<const uint64_t> chunk_start, std::span<const uint64_t> chunk_count,
                      std::span<const uint64_t> start, std::span<const uint64_t> count, size_t esize, uint8_t* out);

// What remains to decode a chunk once its stored bytes are fetched: runs
// without the netcdf-c mutex, on any thread; empty when nothing remains.
using PendingDecode = std::function<void()>;
// Called with the netcdf-c mutex held for the whole chunk [start, start +
// count): either decodes it into dst (native order) at once, or fetches its
// stored bytes and returns the work that decodes them into dst. Either way
// it checks that the file is still the version opened.
using FetchChunk =
    std::function<PendingDecode(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst)>;

// Fills out (C order, native byte order) with the box [start, start +
// count) of a variable of `shape` laid out in `layout`: chunks found in
// cache are copied, the others fetched in batches (one locked section of
// `library` per batch), decoded side by side on the worker pool and kept.
// A chunk another reader is decoding is waited for, not decoded twice.
// key names the variable; its chunk coordinates are filled here. Returns
// the coordinates of the last chunk that was not in cache (nullopt: none).
std::optional<std::vector<uint64_t>> read_box_by_chunks(DecodedChunkCache& cache, DecodedChunkCache::Key key,
                                                        const ChunkLayout& layout, const std::vector<uint64_t>& shape,
                                                        size_t element_size, std::span<const uint64_t> start,
                                                        std::span<const uint64_t> count, void* out,
                                                        std::mutex& library, const FetchChunk& fetch);

// Decodes and keeps up to n of the chunks that follow chunk `after` (chunk
// coordinates) in C order over the chunk grid and are not in cache (looking
// at no more than 4 n of them): what the next misses of a reader going
// forward will need. Returns how many were decoded.
size_t decode_following_chunks(DecodedChunkCache& cache, DecodedChunkCache::Key key, const ChunkLayout& layout,
                               const std::vector<uint64_t>& shape, size_t element_size,
                               std::span<const uint64_t> after, size_t n, std::mutex& library,
                               const FetchChunk& fetch);

}  // namespace ncafs::netcdf
