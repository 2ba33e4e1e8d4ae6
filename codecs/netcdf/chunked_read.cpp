#include "codecs/netcdf/chunked_read.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <thread>

#include "codecs/checked_math.hpp"
#include "codecs/dataset.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "io/mutex.hpp"
#include "io/worker_pool.hpp"

namespace ncafs::netcdf {

namespace {

bool is_filtered(int ncid, int varid) NCAFS_REQUIRES(library_mutex) {
    size_t nfilters = 0;
    if (nc_inq_var_filter_ids(ncid, varid, &nfilters, nullptr) == NC_NOERR && nfilters > 0) return true;
    int shuffle = 0, deflate = 0, level = 0;
    return nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) == NC_NOERR && (shuffle || deflate);
}

// The chunk lengths netcdf-c reports, clipped to the shape; nullopt for a
// variable that is not chunked (or a length of 0: nothing sensible to tile).
std::optional<std::vector<uint64_t>> chunk_lengths(int ncid, int varid, const std::vector<uint64_t>& shape)
    NCAFS_REQUIRES(library_mutex) {
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

// Whether the variable is named like a dimension it is not the coordinate
// of (netCDF-4 stores it as "_nc4_non_coord_NAME"): netcdf-c 4.9's
// nc_set_var_chunk_cache reopens such a variable's dataset by NAME
// alone, the dimension's scale, and every later read of the file fails
// ("NetCDF: HDF error"). Such a variable keeps HDF5's chunk cache.
bool shadows_a_dimension(int ncid, int varid) NCAFS_REQUIRES(library_mutex) {
    char name[NC_MAX_NAME + 1] = {};
    int ndims = 0, dimid = -1;
    if (nc_inq_varname(ncid, varid, name) != NC_NOERR || nc_inq_dimid(ncid, name, &dimid) != NC_NOERR) return false;
    if (nc_inq_varndims(ncid, varid, &ndims) != NC_NOERR || ndims != 1) return true;
    int first = -1;
    return nc_inq_vardimid(ncid, varid, &first) != NC_NOERR || first != dimid;
}

// Strides (in elements) of a C-order array of the given extents.
std::vector<uint64_t> strides_of(std::span<const uint64_t> extent) {
    std::vector<uint64_t> s(extent.size(), 1);
    for (size_t d = extent.size(); d-- > 1;) s[d - 1] = s[d] * extent[d];
    return s;
}

}  // namespace

void copy_box_overlap(const uint8_t* chunk, std::span<const uint64_t> chunk_start, std::span<const uint64_t> chunk_count,
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

std::vector<uint64_t> describe_chunking(int ncid, int varid, const std::vector<uint64_t>& shape, bool& filtered) {
    auto lengths = chunk_lengths(ncid, varid, shape);
    filtered = lengths && is_filtered(ncid, varid);
    if (!lengths) return {};
    // Each chunk is inflated once, whole, and kept by the cache: HDF5's copy
    // would only double the memory (and escape the bound).
    if (filtered && !shadows_a_dimension(ncid, varid)) nc_set_var_chunk_cache(ncid, varid, 0, 0, 0.75f);
    return std::move(*lengths);
}

uint64_t largest_kept_chunk(const DecodedChunkCache& cache) {
    const uint64_t room = cache.largest_entry();
    return room > DecodedChunkCache::kEntryOverhead ? room - DecodedChunkCache::kEntryOverhead : 0;
}

std::optional<ChunkLayout> chunk_layout_of(const std::vector<uint64_t>& lengths, size_t element_size,
                                           const std::vector<uint64_t>& shape, uint64_t smallest, uint64_t largest) {
    if (lengths.empty() || lengths.size() != shape.size() || shape.size() > kLargestCachedRank) return std::nullopt;
    std::optional<uint64_t> bytes = element_size;
    for (size_t d = 0; d < lengths.size(); ++d) {
        if (lengths[d] == 0 || lengths[d] > shape[d]) return std::nullopt;
        if (bytes) bytes = checked::mul(*bytes, lengths[d]);
    }
    if (!bytes || *bytes < smallest || *bytes > largest) return std::nullopt;
    return ChunkLayout{lengths, *bytes};
}

namespace {

// Chunks being decoded by some reader: another reader missing the same
// chunk waits for it rather than inflating it a second time (the kernel's
// readahead asks for neighbouring blocks at once, which share chunks).
class ChunksInFlight {
public:
    bool claim(const DecodedChunkCache::Key& key) {
        MutexLock lock(mutex_);
        if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) return false;
        keys_.push_back(key);
        return true;
    }
    void release(const DecodedChunkCache::Key& key) {
        {
            MutexLock lock(mutex_);
            keys_.erase(std::find(keys_.begin(), keys_.end(), key));
        }
        done_.notify_all();
    }
    void wait_for(const DecodedChunkCache::Key& key) {
        MutexLock lock(mutex_);
        while (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) lock.wait(done_);
    }

private:
    Mutex mutex_;
    std::condition_variable done_;
    std::vector<DecodedChunkCache::Key> keys_ NCAFS_GUARDED_BY(mutex_);  // few: one batch per reader
};

ChunksInFlight& in_flight() {
    static ChunksInFlight chunks;
    return chunks;
}

// Decoded bytes held at once by one reader's batch of misses (at least one chunk).
constexpr uint64_t kBatchBytes = uint64_t{32} << 20;

struct Miss {
    DecodedChunkCache::Key key;
    std::vector<uint64_t> start, count;
    std::shared_ptr<std::vector<uint8_t>> decoded;
    DecodedChunkCache::Chunk found;  // decoded by another reader
    PendingDecode work;
    bool claimed = false;
    uint8_t* direct = nullptr;  // decoded straight into the reader's buffer, not kept (lands_whole)
};

// Chunks from this size on that land whole in a read are decoded in place
// (lands_whole); smaller ones (coordinates, read whole again and again)
// are kept.
constexpr uint64_t kSmallestInPlaceChunk = uint64_t{64} << 10;

// Whether the chunk [chunk_start, + chunk_count) lies whole in the box
// [start, + count) as one run of the box's C-order buffer (every dimension
// after the first whole in both): a reader of whole chunks (a view read in
// order, an export) gets it decoded in place, with no copy and no cache
// entry: the bytes it needs again are the view's, which the kernel's page
// cache and the block cache keep.
bool lands_whole(std::span<const uint64_t> chunk_start, std::span<const uint64_t> chunk_count,
                 std::span<const uint64_t> start, std::span<const uint64_t> count) {
    if (chunk_start[0] < start[0] || chunk_start[0] + chunk_count[0] > start[0] + count[0]) return false;
    for (size_t d = 1; d < start.size(); ++d)
        if (chunk_start[d] != start[d] || chunk_count[d] != count[d]) return false;
    return true;
}

// Decodes the chunks of `misses`: the stored bytes of all of them fetched
// (or asked for), then inflated (or waited for) side by side on up to `width`
// threads of the pool; each chunk is kept, and its waiters woken, as soon
// as it is decoded.
void decode_batch(std::vector<Miss>& misses, DecodedChunkCache& cache, size_t element_size, const FetchChunk& fetch,
                  size_t width) {
    std::vector<Miss*> waiting;
    std::vector<size_t> pending;
    auto keep = [&](Miss& m) {
        cache.put(m.key, m.decoded);
        in_flight().release(m.key);
        m.claimed = false;
    };
    auto release_claims = [&] {
        for (auto& m : misses)
            if (m.claimed) in_flight().release(m.key), m.claimed = false;
    };
    try {
        for (size_t i = 0; i < misses.size(); ++i) {
            Miss& m = misses[i];
            if (m.direct) {
                if ((m.work = fetch(m.start, m.count, m.direct))) pending.push_back(i);
                continue;
            }
            if ((m.found = cache.get(m.key))) continue;  // decoded meanwhile by another reader
            if (!(m.claimed = in_flight().claim(m.key))) {
                waiting.push_back(&m);
                continue;
            }
            m.decoded = std::make_shared<std::vector<uint8_t>>(element_count(m.count) * element_size);
            m.work = fetch(m.start, m.count, m.decoded->data());
            if (m.work) pending.push_back(i);
        }
        for (auto& m : misses)
            if (m.claimed && !m.work) keep(m);  // filled at once
        WorkerPool::shared().parallel_for(pending.size(), std::min(pending.size(), width), [&](size_t i, size_t) {
            misses[pending[i]].work();
            if (!misses[pending[i]].direct) keep(misses[pending[i]]);
        });
    } catch (...) {
        release_claims();
        throw;
    }
    release_claims();  // before waiting: two readers never wait for each other
    for (Miss* m : waiting) {
        in_flight().wait_for(m->key);
        if ((m->found = cache.get(m->key))) continue;
        // The other reader failed, or the cache keeps nothing: decode it here.
        m->decoded = std::make_shared<std::vector<uint8_t>>(element_count(m->count) * element_size);
        if (PendingDecode work = fetch(m->start, m->count, m->decoded->data())) work();
    }
}

}  // namespace

std::optional<std::vector<uint64_t>> read_box_by_chunks(DecodedChunkCache& cache, DecodedChunkCache::Key key,
                                                        const ChunkLayout& layout, const std::vector<uint64_t>& shape,
                                                        size_t element_size, std::span<const uint64_t> start,
                                                        std::span<const uint64_t> count, void* out,
                                                        const FetchChunk& fetch) {
    const size_t rank = shape.size();
    const auto& len = layout.lengths;
    std::vector<uint64_t> first(rank), last(rank);
    std::optional<std::vector<uint64_t>> last_missed;
    for (size_t d = 0; d < rank; ++d) {
        if (count[d] == 0) return last_missed;
        first[d] = start[d] / len[d];
        last[d] = (start[d] + count[d] - 1) / len[d];
    }
    auto* dst = static_cast<uint8_t*>(out);
    const size_t batch = static_cast<size_t>(std::max<uint64_t>(1, kBatchBytes / layout.bytes));
    std::vector<Miss> misses;
    auto flush = [&] {
        decode_batch(misses, cache, element_size, fetch, std::max(1u, std::thread::hardware_concurrency()));
        for (const Miss& m : misses) {
            if (m.direct) continue;
            const auto& bytes = m.found ? *m.found : *m.decoded;
            copy_box_overlap(bytes.data(), m.start, m.count, start, count, element_size, dst);
        }
        misses.clear();
    };
    std::vector<uint64_t> index = first, chunk_start(rank), chunk_count(rank);
    for (;;) {
        for (size_t d = 0; d < rank; ++d) {
            chunk_start[d] = index[d] * len[d];
            chunk_count[d] = std::min(len[d], shape[d] - chunk_start[d]);
        }
        key.chunk = index;
        if (DecodedChunkCache::Chunk chunk = cache.get(key)) {
            copy_box_overlap(chunk->data(), chunk_start, chunk_count, start, count, element_size, dst);
        } else if (layout.bytes >= kSmallestInPlaceChunk && lands_whole(chunk_start, chunk_count, start, count)) {
            Miss m{key, chunk_start, chunk_count};
            m.direct = dst + (chunk_start[0] - start[0]) * (element_count(count) / count[0]) * element_size;
            misses.push_back(std::move(m));  // not a miss to decode ahead of: the reader reads whole chunks
            if (misses.size() >= batch) flush();
        } else {
            misses.push_back(Miss{key, chunk_start, chunk_count});
            last_missed = index;
            if (misses.size() >= batch) flush();
        }
        size_t d = rank;
        while (d-- > 0) {
            if (++index[d] <= last[d]) break;
            index[d] = first[d];
        }
        if (d == static_cast<size_t>(-1)) break;
    }
    if (!misses.empty()) flush();
    return last_missed;
}

size_t decode_following_chunks(DecodedChunkCache& cache, DecodedChunkCache::Key key, const ChunkLayout& layout,
                               const std::vector<uint64_t>& shape, size_t element_size,
                               std::span<const uint64_t> after, size_t n, const FetchChunk& fetch) {
    const size_t rank = shape.size();
    std::vector<uint64_t> grid(rank), index(after.begin(), after.end());
    for (size_t d = 0; d < rank; ++d) grid[d] = (shape[d] - 1) / layout.lengths[d] + 1;
    std::vector<Miss> misses;
    // Chunks already kept are skipped, a bounded number of them.
    for (size_t looked = 0; misses.size() < n && looked < 4 * n; ++looked) {
        size_t d = rank;
        while (d-- > 0) {
            if (++index[d] < grid[d]) break;
            index[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;  // past the last chunk
        key.chunk = index;
        if (cache.get(key)) continue;
        Miss m{key, std::vector<uint64_t>(rank), std::vector<uint64_t>(rank)};
        for (size_t k = 0; k < rank; ++k) {
            m.start[k] = index[k] * layout.lengths[k];
            m.count[k] = std::min(layout.lengths[k], shape[k] - m.start[k]);
        }
        misses.push_back(std::move(m));
    }
    if (!misses.empty()) decode_batch(misses, cache, element_size, fetch, 1);  // one core: readers first
    return misses.size();
}

}  // namespace ncafs::netcdf
