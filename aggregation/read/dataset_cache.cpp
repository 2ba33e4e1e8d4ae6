#include "aggregation/read/dataset_cache.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>

#include "aggregation/read/remote_fragment.hpp"
#include "codecs/error.hpp"
#include "codecs/open_dataset.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

size_t descriptor_budget() {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1024;
    return std::max<size_t>(4, static_cast<size_t>(limit.rlim_cur) / 4);
}

DatasetCache::DatasetCache(size_t capacity)
    : entries_(capacity == 0 ? 1 : capacity), capacity_(capacity == 0 ? 1 : capacity) {}

size_t DatasetCache::KeyHash::operator()(const Key& k) const {
    size_t h = std::hash<std::string>{}(k.group);
    for (uint64_t part : {uint64_t(k.identity.device), uint64_t(k.identity.inode), uint64_t(k.identity.mtime_ns),
                          k.identity.size, uint64_t(k.identity.ctime_ns)})
        h ^= std::hash<uint64_t>{}(part) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

DatasetCache& DatasetCache::shared() {
    static DatasetCache cache(std::min<size_t>(256, descriptor_budget()));
    return cache;
}

std::shared_ptr<const OpenFile> DatasetCache::open_file(const std::string& path, const ConfinedRoots* within,
                                                        bool with_head) {
    // With the head: open, pread, then the one fstat (OpenFile::open_with_head).
    auto open = [&] { return with_head ? open_for_reading(path, within) : open_regular_file(path, within); };
    OpenResult r = open();
    if (!r.fd && (r.error == EMFILE || r.error == ENFILE) && drop_idle() > 0) r = open();
    if (!r.fd) {
        if (r.error == ENOENT) throw SourceError(path, "does not exist or cannot be accessed");
        throw SourceError(path, r.reason);
    }
    if (with_head) return OpenFile::open_with_head(r.fd.release(), path, kDatasetHeadBytes);
    return OpenFile::adopt(r.fd.release(), path, r.st);
}

std::shared_ptr<const Dataset> DatasetCache::get(const std::string& path, const std::string& group,
                                                 const ConfinedRoots* within) {
    return get_opened(path, group, within).dataset;
}

DatasetCache::Opened DatasetCache::get_opened(const std::string& path, const std::string& group,
                                              const ConfinedRoots* within) {
    if (remote::is_remote_url(path)) return get_remote(path, group);
    // The identity comes from the fd that will be read: a swap between a
    // stat and an open cannot give one file's bytes under another's key.
    // A dataset of the whole file not opened lately reads the file's first
    // bytes first (a group goes to netcdf-c, which reads its own).
    const bool likely_cached = recent_paths_.seen_again(path);
    auto file = open_file(path, within, group.empty() && !likely_cached);
    const Key key{file->identity(), group};
    return get_or_open(key, std::move(file));
}

bool DatasetCache::RecentPaths::seen_again(const std::string& path) {
    const uint64_t hash = std::hash<std::string>{}(path) | 1;  // 0: an empty slot
    auto& slot = slots_[hash % kSlots];
    return slot.exchange(hash, std::memory_order_relaxed) == hash;
}

namespace {

bool replaced(const DatasetCache::Opened& opened) {
    const RemoteBytes* object = opened.file ? opened.file->remote_bytes() : nullptr;
    return object && remote::RemoteStore::shared().replaced(*object);
}

}  // namespace

DatasetCache::Opened DatasetCache::get_remote(const std::string& url, const std::string& group) {
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mutex_);
        auto seen = remote_seen_.find(url);
        // A read that found the object replaced (412, another ETag) asks again at once.
        if (seen != remote_seen_.end() && now - seen->second.when < kRemoteRevalidate)
            if (auto hit = entries_.get(Key{seen->second.identity, group}); hit && !replaced(*hit)) return *hit;
    }
    RemoteFragmentFile opened = open_remote_fragment(url);  // one HEAD (outside the lock)
    {
        std::lock_guard lock(mutex_);
        if (remote_seen_.size() > 4 * entries_.capacity()) remote_seen_.clear();  // bounded
        remote_seen_[url] = RemoteSeen{opened.identity, now};
    }
    const Key key{opened.identity, group};
    return get_or_open(key, std::move(opened.read_from));
}

DatasetCache::Opened DatasetCache::get_or_open(const Key& key, std::shared_ptr<const OpenFile> file) {
    {
        std::lock_guard lock(mutex_);
        if (auto hit = entries_.get(key)) return *hit;
    }
    // Open outside the lock: other threads keep reading cached files meanwhile.
    Opened opened{std::make_shared<const Dataset>(open_dataset(file, key.group)), file};
    std::optional<Opened> dropped;  // destroyed after the lock: its file closes outside it
    std::lock_guard lock(mutex_);
    ++opens_;
    if (auto hit = entries_.get(key)) return *hit;  // another thread won
    if (entries_.size() >= entries_.capacity()) dropped = entries_.pop_least_recent();
    entries_.put(key, opened);
    return opened;
}

size_t DatasetCache::drop_idle() {
    std::lock_guard lock(mutex_);
    return entries_.erase_if([](const Key&, const Opened& o) { return o.dataset.use_count() == 1; });
}

size_t DatasetCache::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

size_t DatasetCache::opens() const {
    std::lock_guard lock(mutex_);
    return opens_;
}

size_t DatasetCache::capacity() const { return capacity_.load(std::memory_order_relaxed); }

void DatasetCache::set_capacity(size_t capacity) {
    std::lock_guard lock(mutex_);
    entries_.set_capacity(capacity == 0 ? 1 : capacity);
    capacity_.store(entries_.capacity(), std::memory_order_relaxed);
}

}  // namespace ncafs::agg
