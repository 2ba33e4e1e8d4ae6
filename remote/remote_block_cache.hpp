// The in-memory cache of fixed-size blocks of remote objects, keyed by
// (object URL + version, block index) and bounded in bytes
// (memory_cache_bytes). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::remote {

using Block = std::shared_ptr<const std::vector<char>>;

struct BlockKey {
    std::string object;  // object_key(): URL and version
    uint64_t index;
    bool operator==(const BlockKey&) const = default;
};

struct BlockKeyHash {
    size_t operator()(const BlockKey& k) const { return std::hash<std::string>{}(k.object) ^ (k.index * 0x9e3779b97f4a7c15ull); }
};

class RemoteBlockCache {
public:
    explicit RemoteBlockCache(size_t capacity_bytes) : lru_(capacity_bytes) {}
    Block get(const BlockKey& key) {
        MutexLock lock(mutex_);
        return lru_.get(key).value_or(nullptr);
    }
    void put(const BlockKey& key, Block block) {
        MutexLock lock(mutex_);
        if (block->size() <= lru_.capacity()) lru_.put(key, std::move(block));
    }

private:
    Mutex mutex_;  // lock order: a leaf (taken under RemoteObject::sequence_mutex_)
    LruCache<BlockKey, Block, BlockKeyHash, ByteWeight> lru_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::remote
