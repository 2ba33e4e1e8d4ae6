#include "aggregation/read/dataset_cache.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>

#include "codecs/error.hpp"
#include "codecs/open_dataset.hpp"

namespace ncafs::agg {

size_t descriptor_budget() {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1024;
    return std::max<size_t>(4, static_cast<size_t>(limit.rlim_cur) / 4);
}

DatasetCache::DatasetCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

DatasetCache& DatasetCache::shared() {
    static DatasetCache cache(std::min<size_t>(256, descriptor_budget()));
    return cache;
}

std::shared_ptr<const OpenFile> DatasetCache::open_file(const std::string& path, const ConfinedRoots* within) {
    OpenResult r = open_regular_file(path, within);
    if (!r.fd && (r.error == EMFILE || r.error == ENFILE) && drop_idle() > 0) r = open_regular_file(path, within);
    if (!r.fd) {
        if (r.error == ENOENT) throw SourceError(path, "does not exist or cannot be accessed");
        throw SourceError(path, r.reason);
    }
    return OpenFile::adopt(r.fd.release(), path);
}

std::shared_ptr<const Dataset> DatasetCache::get(const std::string& path, const std::string& group,
                                                 const ConfinedRoots* within) {
    // The identity comes from the fd that will be read: a swap between a
    // stat and an open cannot give one file's bytes under another's key.
    auto file = open_file(path, within);
    const FileIdentity& id = file->identity();
    const Key key{id.device, id.inode, id.mtime_ns, id.size, id.ctime_ns, group};
    {
        std::lock_guard lock(mutex_);
        if (auto it = entries_.find(key); it != entries_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second.lru);
            return it->second.dataset;
        }
    }
    // Open outside the lock: other threads keep reading cached files meanwhile.
    auto ds = std::make_shared<const Dataset>(open_dataset(std::move(file), group));
    std::lock_guard lock(mutex_);
    ++opens_;
    if (auto it = entries_.find(key); it != entries_.end()) return it->second.dataset;  // another thread won
    lru_.push_front(key);
    entries_.emplace(key, Entry{ds, lru_.begin()});
    trim_locked();
    return ds;
}

void DatasetCache::trim_locked() {
    while (entries_.size() > capacity_) {
        entries_.erase(lru_.back());
        lru_.pop_back();
    }
}

size_t DatasetCache::drop_idle() {
    std::lock_guard lock(mutex_);
    size_t dropped = 0;
    for (auto it = lru_.begin(); it != lru_.end();) {
        auto entry = entries_.find(*it);
        if (entry->second.dataset.use_count() == 1) {
            entries_.erase(entry);
            it = lru_.erase(it);
            ++dropped;
        } else {
            ++it;
        }
    }
    return dropped;
}

size_t DatasetCache::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

size_t DatasetCache::opens() const {
    std::lock_guard lock(mutex_);
    return opens_;
}

size_t DatasetCache::capacity() const {
    std::lock_guard lock(mutex_);
    return capacity_;
}

void DatasetCache::set_capacity(size_t capacity) {
    std::lock_guard lock(mutex_);
    capacity_ = capacity == 0 ? 1 : capacity;
    trim_locked();
}

}  // namespace ncafs::agg
