#include "aggregation/read/dataset_cache.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <vector>

#include "aggregation/read/remote_fragment.hpp"
#include "aggregation/zarr_store/remote_zarr_prefix.hpp"
#include "aggregation/zarr_store/zarr_folder.hpp"
#include "aggregation/zarr_store/zarr_store_dataset.hpp"
#include "codecs/error.hpp"
#include "codecs/open_dataset.hpp"
#include "io/file_pins.hpp"
#include "remote/network_scope.hpp"
#include "remote/remote_store.hpp"
#include "io/system_call_error.hpp"

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
    reserve_slot();
    OpenResult r = open();
    if (!r.fd && (r.error == EMFILE || r.error == ENFILE) && drop_idle() > 0) r = open();
    if (!r.fd) {
        release_slot();
        if (r.error == ENOENT) throw SourceError(path, "does not exist or cannot be accessed");
        throw SystemCallError(path, r.reason, r.error);
    }
    // The file the callers were checked for, or nothing (io/file_pins.hpp).
    if (std::string refused = FilePins::shared().refusal(path, r.fd.get()); !refused.empty()) {
        release_slot();
        throw SourceError(path, refused);
    }
    std::shared_ptr<const OpenFile> file;
    try {
        file = with_head ? OpenFile::open_with_head(r.fd.release(), path, kDatasetHeadBytes)
                         : OpenFile::adopt(r.fd.release(), path, r.st);
    } catch (...) {
        release_slot();
        throw;
    }
    return counted(std::move(file));
}

void DatasetCache::reserve_slot() {
    std::vector<Opened> closing;  // closed after the lock (a netCDF-4 file closes under the library's lock)
    MutexLock lock(mutex_);
    const size_t bound = entries_.capacity();
    auto idle = [](const Key&, const Opened& o) { return o.dataset.use_count() == 1; };
    while (files_open_->load(std::memory_order_relaxed) >= bound + closing.size()) {
        auto dropped = entries_.pop_least_recent_if(idle);
        if (!dropped) break;  // every open file is in use: those may pass the bound
        closing.push_back(std::move(*dropped));
    }
    files_open_->fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<const OpenFile> DatasetCache::counted(std::shared_ptr<const OpenFile> file) {
    // Gives the slot back when the last holder lets go of the file.
    struct Counted {
        Counted(std::shared_ptr<const OpenFile> f, std::shared_ptr<std::atomic<size_t>> n)
            : file(std::move(f)), open(std::move(n)) {}
        Counted(const Counted&) = delete;
        Counted& operator=(const Counted&) = delete;
        ~Counted() {
            file.reset();  // closed before its slot is given back
            open->fetch_sub(1, std::memory_order_relaxed);
        }
        std::shared_ptr<const OpenFile> file;
        std::shared_ptr<std::atomic<size_t>> open;
    };
    auto holder = std::make_shared<Counted>(std::move(file), files_open_);
    return std::shared_ptr<const OpenFile>(holder, holder->file.get());
}

std::shared_ptr<const Dataset> DatasetCache::get(const std::string& path, const std::string& group,
                                                 const ConfinedRoots* within) {
    return get_opened(path, group, within).dataset;
}

DatasetCache::Opened DatasetCache::get_opened(const std::string& path, const std::string& group,
                                              const ConfinedRoots* within) {
    if (remote::is_remote_url(path)) return names_zarr_store(path) ? get_remote_zarr(path, group) : get_remote(path, group);
    if (names_zarr_store(path)) return get_local_zarr(path, group, within);
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
        MutexLock lock(mutex_);
        auto seen = remote_seen_.find(url);
        // A read that found the object replaced (412, another ETag) asks again at once.
        if (seen != remote_seen_.end() && now - seen->second.when < kRemoteRevalidate)
            if (auto hit = entries_.get(Key{seen->second.identity, group}); hit && !replaced(*hit)) return *hit;
    }
    RemoteFragmentFile opened = open_remote_fragment(url);  // one HEAD (outside the lock)
    {
        MutexLock lock(mutex_);
        if (remote_seen_.size() > 4 * entries_.capacity()) remote_seen_.clear();  // bounded
        remote_seen_[url] = RemoteSeen{opened.identity, now};
    }
    const Key key{opened.identity, group};
    return get_or_open(key, std::move(opened.read_from));
}

DatasetCache::Opened DatasetCache::get_remote_zarr(const std::string& url, const std::string& group) {
    const auto now = std::chrono::steady_clock::now();
    const std::string seen_key = "zarr\n" + group + "\n" + url;
    std::promise<Opened> mine;
    std::shared_future<Opened> pending;
    bool opener = false;
    {
        MutexLock lock(mutex_);
        auto seen = remote_seen_.find(seen_key);
        if (seen != remote_seen_.end() && now - seen->second.when < kRemoteRevalidate)
            if (auto hit = entries_.get(Key{seen->second.identity, group})) return *hit;
        // One open per store at a time: the variables of a view resolve their fragments at once.
        if (auto it = zarr_opening_.find(seen_key); it != zarr_opening_.end()) {
            pending = it->second;
        } else {
            pending = mine.get_future().share();
            zarr_opening_.emplace(seen_key, pending);
            opener = true;
        }
    }
    if (!opener) {
        try {
            return pending.get();  // the opener's dataset, or its error
        } catch (const remote::NetworkNeeded&) {
            return get_remote_zarr(url, group);  // it could not send requests; this thread may
        }
    }
    try {
        ZarrOpened opened = open_remote_zarr(url, group);
        MutexLock lock(mutex_);
        if (remote_seen_.size() > 4 * entries_.capacity()) remote_seen_.clear();  // bounded
        remote_seen_[seen_key] = RemoteSeen{opened.identity, now};
        zarr_opening_.erase(seen_key);
        mine.set_value(opened.opened);
        return opened.opened;
    } catch (...) {
        {
            MutexLock lock(mutex_);
            zarr_opening_.erase(seen_key);
        }
        mine.set_exception(std::current_exception());
        throw;
    }
}

DatasetCache::ZarrOpened DatasetCache::open_remote_zarr(const std::string& url, const std::string& group) {
    FileIdentity identity{};
    identity.device = kRemoteDevice;
    identity.inode = static_cast<ino_t>(std::hash<std::string>{}(url));
    {
        MutexLock lock(mutex_);
        identity.mtime_ns = static_cast<int64_t>(++zarr_opens_);  // each open its own entry
    }
    // Opened outside the lock (requests); no local file: nothing to see changed.
    Opened opened = get_or_open(Key{identity, group}, nullptr,
                                [&] { return open_remote_zarr_store(url, group, AggregationOptions{}); });
    return ZarrOpened{opened, identity};
}

DatasetCache::Opened DatasetCache::get_local_zarr(const std::string& path, const std::string& group,
                                                 const ConfinedRoots* within) {
    if (!within) throw SourceError(path, "a Zarr store is opened confined to the allowed roots only");
    UniqueFd fd = open_store_folder(path, *within);
    // The folder the callers were checked for, or nothing (io/file_pins.hpp).
    if (std::string refused = FilePins::shared().refusal(path, fd.get()); !refused.empty())
        throw SourceError(path, refused);
    // Who may read the folder the callers were checked for: with allow_other,
    // every folder and member read beneath it must be readable by all of them.
    std::optional<ZarrReaders> readers;
    if (serves_other_users_.load(std::memory_order_relaxed)) readers = readers_of(fd.get());
    const std::string key = group.empty() || group == "/" ? "" : group.front() == '/' ? group.substr(1) : group;
    if (!key.empty()) fd = open_store_subfolder(fd.get(), path, key, readers ? &*readers : nullptr);
    const std::string folder = key.empty() ? path : path + "/" + key;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        const int e = errno;
        throw SystemCallError(folder, std::string("cannot stat: ") + std::strerror(e), e);
    }
    // Arrays added or removed change the folder's identity; the dataset is read from the fd just judged.
    return get_or_open(Key{identity_from_stat(st), group}, nullptr, [&] {
        return open_zarr_fragment_store(std::move(fd), folder, readers);
    });
}

// An entry whose file a read found changed is not served again, even under
// an unchanged identity (timestamps that move once a tick may not show a
// rewrite): the file just opened replaces it.
DatasetCache::Opened DatasetCache::get_or_open(const Key& key, std::shared_ptr<const OpenFile> file,
                                              const std::function<std::shared_ptr<const Dataset>()>& open) {
    auto usable = [](const std::optional<Opened>& hit) { return hit && !(hit->file && hit->file->seen_changed()); };
    {
        MutexLock lock(mutex_);
        if (auto hit = entries_.get(key); usable(hit)) return *hit;
    }
    // Open outside the lock: other threads keep reading cached files meanwhile.
    Opened opened{open ? open() : std::make_shared<const Dataset>(open_dataset(file, key.group)), file};
    std::optional<Opened> dropped;  // destroyed after the lock: its file closes outside it
    MutexLock lock(mutex_);
    ++opens_;
    if (auto hit = entries_.get(key)) {
        if (usable(hit)) return *hit;  // another thread won
        dropped = std::move(hit);      // the stale entry, replaced below
    } else if (entries_.size() >= entries_.capacity()) {
        dropped = entries_.pop_least_recent();
    }
    entries_.put(key, opened);
    return opened;
}

size_t DatasetCache::drop_idle() {
    MutexLock lock(mutex_);
    return entries_.erase_if([](const Key&, const Opened& o) { return o.dataset.use_count() == 1; });
}

size_t DatasetCache::size() const {
    MutexLock lock(mutex_);
    return entries_.size();
}

size_t DatasetCache::opens() const {
    MutexLock lock(mutex_);
    return opens_;
}

size_t DatasetCache::capacity() const { return capacity_.load(std::memory_order_relaxed); }

void DatasetCache::set_capacity(size_t capacity) {
    MutexLock lock(mutex_);
    entries_.set_capacity(capacity == 0 ? 1 : capacity);
    capacity_.store(entries_.capacity(), std::memory_order_relaxed);
}

}  // namespace ncafs::agg
