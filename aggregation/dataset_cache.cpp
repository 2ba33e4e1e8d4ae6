#include "aggregation/dataset_cache.hpp"

#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "codecs/open_dataset.hpp"

namespace ncafs::agg {

DatasetCache::DatasetCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

DatasetCache& DatasetCache::shared() {
    static DatasetCache cache(256);
    return cache;
}

std::shared_ptr<const Dataset> DatasetCache::get(const std::string& path, const std::string& group) {
    auto id = identity_of(path);
    if (!id) throw SourceError(path, "does not exist or cannot be accessed");
    const Key key{id->device, id->inode, id->mtime_ns, id->size, group};
    {
        std::lock_guard lock(mutex_);
        if (auto it = entries_.find(key); it != entries_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second.lru);
            return it->second.dataset;
        }
    }
    // Open outside the lock: other threads keep reading cached files meanwhile.
    auto ds = std::make_shared<const Dataset>(group.empty() ? open_dataset(path)
                                                            : netcdf::open_netcdf_dataset(path, nullptr, group));
    std::lock_guard lock(mutex_);
    ++opens_;
    if (auto it = entries_.find(key); it != entries_.end()) return it->second.dataset;  // another thread won
    lru_.push_front(key);
    entries_.emplace(key, Entry{ds, lru_.begin()});
    while (entries_.size() > capacity_) {
        entries_.erase(lru_.back());
        lru_.pop_back();
    }
    return ds;
}

void DatasetCache::set_capacity(size_t capacity) {
    std::lock_guard lock(mutex_);
    capacity_ = capacity == 0 ? 1 : capacity;
    while (entries_.size() > capacity_) {
        entries_.erase(lru_.back());
        lru_.pop_back();
    }
}

size_t DatasetCache::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

size_t DatasetCache::opens() const {
    std::lock_guard lock(mutex_);
    return opens_;
}

}  // namespace ncafs::agg
