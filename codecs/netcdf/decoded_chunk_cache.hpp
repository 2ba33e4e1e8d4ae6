// Decoded chunks of netCDF-4 (HDF5) variables, kept at the grain HDF5 makes
// them: inflating a chunk is the expensive step of reading such a file, and a
// view asks for the same chunk again and again (every block of the view that
// crosses it, every reopen of the partition). One process-wide cache, bounded
// by the bytes it holds (the mount's cache_mem=): a chunk counts its decoded
// bytes plus a fixed overhead per entry, so that no chunk shape - however
// small or large a hostile file declares it - lets memory pass the bound.
// Keys name the file by its identity (device, inode, size, times): a file
// rewritten gets new keys, an unchanged one reopened finds its chunks again.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "io/lru_cache.hpp"
#include "io/open_file.hpp"
#include "io/mutex.hpp"

namespace ncafs::netcdf {

class DecodedChunkCache {
public:
    static constexpr uint64_t kDefaultCapacity = uint64_t{256} << 20;
    // Counted for every entry besides its bytes: key (up to 16 chunk
    // coordinates), list and map nodes, shared buffer header.
    static constexpr uint64_t kEntryOverhead = 512;

    struct Key {
        FileIdentity file;
        uint64_t serial = 0;       // the opening, for a file without identity (never shared)
        int group = 0;             // group id within the file (ncid & 0xffff)
        int varid = 0;
        std::vector<uint64_t> chunk;  // chunk coordinates (element start / chunk length)
        bool operator==(const Key&) const = default;
    };
    using Chunk = std::shared_ptr<const std::vector<uint8_t>>;

    static DecodedChunkCache& shared();
    explicit DecodedChunkCache(uint64_t capacity_bytes = kDefaultCapacity);

    // Lowers or raises the bound (cache_mem=; 0 keeps nothing).
    void set_capacity(uint64_t bytes);
    uint64_t capacity() const;
    // Bytes held, overheads included (never above capacity()).
    uint64_t weight() const;
    size_t entries() const;
    // The largest chunk kept (an eighth of the bound): a bigger one is read
    // without the cache, so that one chunk never pushes out all the others.
    uint64_t largest_entry() const;

    Chunk get(const Key& key);
    // Keeps bytes under key unless they are larger than largest_entry().
    void put(const Key& key, Chunk bytes);
    void clear();

private:
    struct KeyHash {
        size_t operator()(const Key& k) const;
    };
    struct Weigh {
        size_t operator()(const Chunk& c) const { return (c ? c->size() : 0) + kEntryOverhead; }
    };
    mutable Mutex mutex_;
    LruCache<Key, Chunk, KeyHash, Weigh> chunks_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::netcdf
