#include "codecs/vds/vds_chunk_cache.hpp"

#include <list>
#include <map>
#include <mutex>
#include <tuple>

namespace ncafs::vds {
namespace {

using Key = std::tuple<dev_t, ino_t, int64_t, uint64_t, std::string, uint64_t>;

struct Cache {
    std::mutex mutex;
    std::list<std::pair<Key, DecodedChunk>> lru;  // most recent first
    std::map<Key, std::list<std::pair<Key, DecodedChunk>>::iterator> index;
    uint64_t bytes = 0;
    uint64_t budget = kDefaultChunkCacheBytes;

    void evict_to_budget() {
        while (bytes > budget) {
            bytes -= lru.back().second->size();
            index.erase(lru.back().first);
            lru.pop_back();
        }
    }
    void insert(const Key& k, DecodedChunk v) {
        if (index.count(k) || v->size() > budget) return;
        bytes += v->size();
        lru.emplace_front(k, std::move(v));
        index[k] = lru.begin();
        evict_to_budget();
    }
};

Cache& cache() {
    static Cache c;
    return c;
}

}  // namespace

DecodedChunk cached_chunk(const FileIdentity& file, const std::string& layer, uint64_t chunk,
                          const std::function<std::vector<uint8_t>()>& decode) {
    const Key key{file.device, file.inode, file.mtime_ns, file.size, layer, chunk};
    Cache& c = cache();
    {
        std::lock_guard lock(c.mutex);
        auto it = c.index.find(key);
        if (it != c.index.end()) {
            c.lru.splice(c.lru.begin(), c.lru, it->second);
            return it->second->second;
        }
    }
    auto value = std::make_shared<const std::vector<uint8_t>>(decode());
    std::lock_guard lock(c.mutex);
    c.insert(key, value);
    return value;
}

uint64_t chunk_cache_bytes() {
    std::lock_guard lock(cache().mutex);
    return cache().bytes;
}

void set_chunk_cache_budget(uint64_t bytes) {
    std::lock_guard lock(cache().mutex);
    cache().budget = bytes;
    cache().evict_to_budget();
}

}  // namespace ncafs::vds
