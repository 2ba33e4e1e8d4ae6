#include "codecs/vds/vds_chunk_cache.hpp"


#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::vds {
namespace {

struct Key {
    FileIdentity file;
    std::string layer;
    uint64_t chunk = 0;
    bool operator==(const Key&) const = default;
};

struct KeyHash {
    size_t operator()(const Key& k) const {
        size_t h = std::hash<std::string>{}(k.layer);
        for (uint64_t part : {uint64_t(k.file.device), uint64_t(k.file.inode), uint64_t(k.file.mtime_ns), k.file.size,
                              k.chunk})
            h ^= std::hash<uint64_t>{}(part) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        return h;
    }
};

struct Cache {
    Mutex mutex;  // lock order: a leaf (chunks are decoded outside it)
    LruCache<Key, DecodedChunk, KeyHash, ByteWeight> chunks NCAFS_GUARDED_BY(mutex){kDefaultChunkCacheBytes};
};

Cache& cache() {
    static Cache c;
    return c;
}

}  // namespace

DecodedChunk cached_chunk(const FileIdentity& file, const std::string& layer, uint64_t chunk,
                          const std::function<std::vector<uint8_t>()>& decode) {
    const Key key{file, layer, chunk};
    Cache& c = cache();
    {
        MutexLock lock(c.mutex);
        if (auto hit = c.chunks.get(key)) return *hit;
    }
    auto value = std::make_shared<const std::vector<uint8_t>>(decode());
    MutexLock lock(c.mutex);
    // Another thread may have decoded it meanwhile: keep the first; a chunk
    // above the whole budget is not kept.
    if (!c.chunks.contains(key) && value->size() <= c.chunks.capacity()) c.chunks.put(key, value);
    return value;
}

uint64_t chunk_cache_bytes() {
    MutexLock lock(cache().mutex);
    return cache().chunks.weight();
}

void set_chunk_cache_budget(uint64_t bytes) {
    MutexLock lock(cache().mutex);
    cache().chunks.set_capacity(static_cast<size_t>(bytes));
}

}  // namespace ncafs::vds
