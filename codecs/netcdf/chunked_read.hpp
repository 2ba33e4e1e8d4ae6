// Reading a chunked netCDF-4 variable chunk by chunk: HDF5 inflates whole
// chunks whatever box is asked, so each chunk a box touches is decoded
// once, whole, and kept in the DecodedChunkCache; the box is copied out of
// the decoded chunks. Where the filters allow (raw_chunks.hpp) ncafs reads
// and inflates a chunk's stored bytes itself, the chunks of one box side by
// side, with no library lock; other chunks are asked of a helper
// (netcdf_helpers.hpp), or read by netcdf-c where no helpers run.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "codecs/netcdf/decoded_chunk_cache.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

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

// The chunk lengths of variable varid of group ncid (netcdf-c mutex held),
// clipped to `shape`, and whether some filter applies: empty lengths for a
// variable that is not chunked (or of rank 0, or with a length of 0).
// Switches HDF5's own chunk cache of a filtered variable off (the
// DecodedChunkCache keeps its chunks).
std::vector<uint64_t> describe_chunking(int ncid, int varid, const std::vector<uint64_t>& shape, bool& filtered)
    NCAFS_REQUIRES(library_mutex);

// Whether a variable of `shape` chunked in `lengths` is read chunk by
// chunk: of rank 1 to kLargestCachedRank, every length within 1..shape, a
// chunk of `smallest` to `largest` bytes (computed with overflow checks:
// the lengths come from the file, through a helper that may lie).
std::optional<ChunkLayout> chunk_layout_of(const std::vector<uint64_t>& lengths, size_t element_size,
                                           const std::vector<uint64_t>& shape, uint64_t smallest, uint64_t largest);
// The largest chunk `cache` keeps, its entry's overhead taken off.
uint64_t largest_kept_chunk(const DecodedChunkCache& cache);
// Chunks ncafs decodes itself are read chunk by chunk up to this size even
// when the cache cannot keep them (cache_mem=0): decoded, copied, dropped.
inline constexpr uint64_t kLargestDecodedChunk = uint64_t{64} << 20;

// Copies the part of one decoded chunk (origin chunk_start, extents
// chunk_count, C order) that lies in the box [start, start + count) to its
// place in out (C order over count).
void copy_box_overlap(const uint8_t* chunk, std::span<const uint64_t> chunk_start, std::span<const uint64_t> chunk_count,
                      std::span<const uint64_t> start, std::span<const uint64_t> count, size_t esize, uint8_t* out);

// What remains to decode a chunk once its stored bytes are fetched: runs
// on any thread, side by side with the batch's others; empty when nothing
// remains.
using PendingDecode = std::function<void()>;
// Called for the whole chunk [start, start + count): either fills dst
// (native order) at once, or returns the work that does (reading and
// inflating its stored bytes, or asking a helper). Either way it checks
// that the file is still the version opened.
using FetchChunk =
    std::function<PendingDecode(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst)>;

// Fills out (C order, native byte order) with the box [start, start +
// count) of a variable of `shape` laid out in `layout`: chunks found in
// cache are copied, the others fetched in batches, decoded side by side on
// the worker pool and kept; but a chunk of 64 KiB or more that lies whole
// in the box as one run of out (every dimension after the first whole) is
// decoded there and not kept (a reader of whole chunks does not read them
// again).
// A chunk another reader is decoding is waited for, not decoded twice.
// key names the variable; its chunk coordinates are filled here. Returns
// the coordinates of the last chunk decoded into the cache (nullopt: none).
std::optional<std::vector<uint64_t>> read_box_by_chunks(DecodedChunkCache& cache, DecodedChunkCache::Key key,
                                                        const ChunkLayout& layout, const std::vector<uint64_t>& shape,
                                                        size_t element_size, std::span<const uint64_t> start,
                                                        std::span<const uint64_t> count, void* out,
                                                        const FetchChunk& fetch);

// Decodes and keeps up to n of the chunks that follow chunk `after` (chunk
// coordinates) in C order over the chunk grid and are not in cache (looking
// at no more than 4 n of them): what the next misses of a reader going
// forward will need. Returns how many were decoded.
size_t decode_following_chunks(DecodedChunkCache& cache, DecodedChunkCache::Key key, const ChunkLayout& layout,
                               const std::vector<uint64_t>& shape, size_t element_size,
                               std::span<const uint64_t> after, size_t n, const FetchChunk& fetch);

}  // namespace ncafs::netcdf
