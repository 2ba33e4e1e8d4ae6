#include "codecs/netcdf/chunked_read.hpp"

#include <netcdf.h>
#include <netcdf_filter.h>

#include <algorithm>
#include <cstring>

#include "codecs/checked_math.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::netcdf {

namespace {

bool is_filtered(int ncid, int varid) {
    size_t nfilters = 0;
    if (nc_inq_var_filter_ids(ncid, varid, &nfilters, nullptr) == NC_NOERR && nfilters > 0) return true;
    int shuffle = 0, deflate = 0, level = 0;
    return nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) == NC_NOERR && (shuffle || deflate);
}

// The chunk lengths netcdf-c reports, clipped to the shape; nullopt for a
// variable that is not chunked (or a length of 0: nothing sensible to tile).
std::optional<std::vector<uint64_t>> chunk_lengths(int ncid, int varid, const std::vector<uint64_t>& shape) {
    if (shape.empty()) return std::nullopt;
    int storage = 0;
    std::vector<size_t> declared(shape.size(), 0);
    if (nc_inq_var_chunking(ncid, varid, &storage, declared.data()) != NC_NOERR || storage != NC_CHUNKED)
        return std::nullopt;
    std::vector<uint64_t> lengths(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
        if (declared[d] == 0 || shape[d] == 0) return std::nullopt;
        lengths[d] = std::min<uint64_t>(declared[d], shape[d]);
    }
    return lengths;
}

// Strides (in elements) of a C-order array of the given extents.
std::vector<uint64_t> strides_of(std::span<const uint64_t> extent) {
    std::vector<uint64_t> s(extent.size(), 1);
    for (size_t d = extent.size(); d-- > 1;) s[d - 1] = s[d] * extent[d];
    return s;
}

// Copies the part of one decoded chunk (origin chunk_start, extents
// chunk_count) that lies in the box [start, start + count) to its place in out.
void copy_overlap(const uint8_t* chunk, std::span<const uint64_t> chunk_start, std::span<const uint64_t> chunk_count,
                  std::span<const uint64_t> start, std::span<const uint64_t> count, size_t esize, uint8_t* out) {
    const size_t rank = start.size();
    std::vector<uint64_t> lo(rank), hi(rank);
    for (size_t d = 0; d < rank; ++d) {
        lo[d] = std::max(start[d], chunk_start[d]);
        hi[d] = std::min(start[d] + count[d], chunk_start[d] + chunk_count[d]);
        if (lo[d] >= hi[d]) return;
    }
    const auto src_stride = strides_of(chunk_count), dst_stride = strides_of(count);
    const size_t run = static_cast<size_t>(hi[rank - 1] - lo[rank - 1]) * esize;
    std::vector<uint64_t> at = lo;  // walks every row of the overlap
    for (;;) {
        uint64_t src = 0, dst = 0;
        for (size_t d = 0; d < rank; ++d) {
            src += (at[d] - chunk_start[d]) * src_stride[d];
            dst += (at[d] - start[d]) * dst_stride[d];
        }
        std::memcpy(out + dst * esize, chunk + src * esize, run);
        size_t d = rank - 1;
        while (d-- > 0) {
            if (++at[d] < hi[d]) break;
            at[d] = lo[d];
        }
        if (d == static_cast<size_t>(-1)) return;
    }
}

}  // namespace

std::optional<ChunkLayout> cached_chunk_layout(int ncid, int varid, size_t element_size,
                                               const std::vector<uint64_t>& shape, const DecodedChunkCache& cache) {
    if (shape.size() > kLargestCachedRank) return std::nullopt;
    auto lengths = chunk_lengths(ncid, varid, shape);
    if (!lengths || !is_filtered(ncid, varid)) return std::nullopt;
    std::optional<uint64_t> bytes = element_size;
    for (uint64_t n : *lengths)
        if (bytes) bytes = checked::mul(*bytes, n);
    const uint64_t room = cache.largest_entry();
    if (!bytes || *bytes < kSmallestCachedChunk || *bytes > room || room - *bytes < DecodedChunkCache::kEntryOverhead)
        return std::nullopt;
    // Each chunk is inflated once, whole, and kept by the cache: HDF5's copy
    // would only double the memory (and escape the bound).
    nc_set_var_chunk_cache(ncid, varid, 0, 0, 0.75f);
    return ChunkLayout{std::move(*lengths), *bytes};
}

void read_box_by_chunks(DecodedChunkCache& cache, DecodedChunkCache::Key key, const ChunkLayout& layout,
                        const std::vector<uint64_t>& shape, size_t element_size, std::span<const uint64_t> start,
                        std::span<const uint64_t> count, void* out, std::mutex& library, const DecodeChunk& decode) {
    const size_t rank = shape.size();
    const auto& len = layout.lengths;
    std::vector<uint64_t> first(rank), last(rank);
    for (size_t d = 0; d < rank; ++d) {
        if (count[d] == 0) return;
        first[d] = start[d] / len[d];
        last[d] = (start[d] + count[d] - 1) / len[d];
    }
    std::vector<uint64_t> index = first, chunk_start(rank), chunk_count(rank);
    // Taken at the first miss and kept to the end: a handoff of the library
    // per chunk between readers would cost a thread wakeup per chunk.
    std::unique_lock<std::mutex> lock(library, std::defer_lock);
    for (;;) {
        for (size_t d = 0; d < rank; ++d) {
            chunk_start[d] = index[d] * len[d];
            chunk_count[d] = std::min(len[d], shape[d] - chunk_start[d]);
        }
        key.chunk = index;
        DecodedChunkCache::Chunk chunk = cache.get(key);
        if (!chunk) {
            if (!lock.owns_lock()) {
                lock.lock();
                chunk = cache.get(key);  // decoded meanwhile by another reader
            }
            if (!chunk) {
                auto bytes = std::make_shared<std::vector<uint8_t>>(element_count(chunk_count) * element_size);
                decode(chunk_start, chunk_count, bytes->data());
                cache.put(key, bytes);
                chunk = std::move(bytes);
            }
        }
        copy_overlap(chunk->data(), chunk_start, chunk_count, start, count, element_size, static_cast<uint8_t*>(out));
        size_t d = rank;
        while (d-- > 0) {
            if (++index[d] <= last[d]) break;
            index[d] = first[d];
        }
        if (d == static_cast<size_t>(-1)) return;
    }
}

}  // namespace ncafs::netcdf
