// Bounded cache of opened datasets (partition files and aggregation files),
// keyed by the identity of the file as opened (device, inode, size, mtime,
// ctime): every lookup opens the path (confined to the allowed roots when
// given) and fstat's that fd, so a file that changed or was swapped is looked
// up under a new key and read from the fd just opened, never by name again;
// the stale entry ages out. The capacity bounds the local files open at
// once, not only the entries: files readers still hold after their entry
// was dropped, and files just opened to be looked up, count too; before
// each open, least recently used entries no reader holds are closed to make
// room (only files in use at once can pass the bound).
// Opens that fail with EMFILE/ENFILE close idle entries and retry once.
// A remote partition (a URL) is keyed by its URL and version; its version is
// asked again (one range GET) at most every kRemoteRevalidate, and at once
// after a read found it replaced: never bytes of two versions. A name
// ending in ".zarr" on a server is a Zarr store, opened as one (its
// metadata read again after kRemoteRevalidate). Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <unordered_map>

#include "io/confined_open.hpp"
#include "io/file_pins.hpp"
#include "codecs/dataset.hpp"
#include "io/lru_cache.hpp"
#include "io/open_file.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

class DatasetCache {
public:
    // Fresh opens see a replaced object within 5 s: this, plus the open's own time.
    static constexpr std::chrono::seconds kRemoteRevalidate{4};

    explicit DatasetCache(size_t capacity = 256);

    // The dataset at path as it is now; opens it (open_dataset) on a miss.
    // With `group` ("/a/b"), the dataset of that netCDF-4 group (its
    // variables and the dimensions visible from it), for fragment variables
    // inside groups. `within`: the roots the path must stay under (every
    // component, symlinks included). Throws SourceError naming the path when
    // it is missing, unreadable, refused or not a regular file.
    std::shared_ptr<const Dataset> get(const std::string& path, const std::string& group = {},
                                       const ConfinedRoots* within = nullptr);
    // get(), with the open file the dataset reads from: its seen_changed()
    // tells a holder that reuses the dataset when to open the path again.
    struct Opened {
        std::shared_ptr<const Dataset> dataset;
        std::shared_ptr<const OpenFile> file;
    };
    Opened get_opened(const std::string& path, const std::string& group = {}, const ConfinedRoots* within = nullptr);

    // allow_other: local Zarr stores named as fragments then serve only
    // members as readable as their store's folder (zarr_store_dataset.hpp).
    void set_serves_other_users(bool serves) { serves_other_users_.store(serves, std::memory_order_relaxed); }

    // Lowers or raises the bound (the mount's open_files=); drops the least
    // recently used entries beyond it.
    void set_capacity(size_t capacity);

    size_t size() const;
    size_t opens() const;  // number of files opened so far (for tests and benchmarks)
    size_t files_open() const { return files_open_->load(std::memory_order_relaxed); }  // local files, as bounded
    size_t capacity() const;  // no lock: asked on every partition resolved
    // Drops entries no reader holds (their files close); returns how many.
    size_t drop_idle();

    // Holders that reuse a dataset between reads (AggregatedSource) do so
    // only while the generation is the one they resolved it in: a partition
    // renamed over or replaced (seen by the partition watch) keeps its old
    // file's identity intact, so only its path tells; after this call each
    // such holder opens its paths once more.
    void paths_may_have_changed() { generation_.fetch_add(1, std::memory_order_relaxed); }
    // A pin changed (io/file_pins.hpp) counts as such a change too: a file
    // kept open since is not read again before its path is opened anew.
    uint64_t generation() const {
        return generation_.load(std::memory_order_relaxed) + FilePins::shared().generation();
    }

    // The process-wide cache used by open_aggregation: its capacity starts
    // from RLIMIT_NOFILE (a quarter of the soft limit, at most 256).
    static DatasetCache& shared();

private:
    // A file by identity (not by name: a renamed file is still cached), and the group read.
    struct Key {
        FileIdentity identity;
        std::string group;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const;
    };
    // Counts a descriptor about to be opened, after closing least recently
    // used idle entries while capacity() or more are open; undo with
    // release_slot() when the open fails.
    void reserve_slot();
    void release_slot() { files_open_->fetch_sub(1, std::memory_order_relaxed); }
    // file, its descriptor counted (reserve_slot) until it closes.
    std::shared_ptr<const OpenFile> counted(std::shared_ptr<const OpenFile> file);
    // with_head: the file's first kDatasetHeadBytes read at the open, for open_dataset.
    std::shared_ptr<const OpenFile> open_file(const std::string& path, const ConfinedRoots* within, bool with_head);
    // Paths opened lately, one hash per slot: a path seen again is likely
    // cached, and a cached file is better opened and fstat'ed alone (no
    // read); a fresh one is read before its one fstat (open_with_head). A
    // wrong guess costs a system call, never a wrong byte.
    class RecentPaths {
    public:
        // True when path was noted lately (its slot holds its hash); notes it.
        bool seen_again(const std::string& path);

    private:
        static constexpr size_t kSlots = 4096;
        std::array<std::atomic<uint64_t>, kSlots> slots_{};
    };
    RecentPaths recent_paths_;
    Opened get_remote(const std::string& url, const std::string& group);
    // A Zarr store on a server (aggregation/zarr_store), opened again (its
    // metadata read) when older than kRemoteRevalidate.
    Opened get_remote_zarr(const std::string& url, const std::string& group);
    struct ZarrOpened {
        Opened opened;
        FileIdentity identity;  // its key's
    };
    ZarrOpened open_remote_zarr(const std::string& url, const std::string& group);
    // A local Zarr store, by the identity of its folder (or of the group's folder within it).
    Opened get_local_zarr(const std::string& path, const std::string& group, const ConfinedRoots* within);
    // The dataset under key, opened from file (or by `open`, when given) on a miss.
    Opened get_or_open(const Key& key, std::shared_ptr<const OpenFile> file,
                       const std::function<std::shared_ptr<const Dataset>()>& open = {});
    struct RemoteSeen {
        FileIdentity identity;
        std::chrono::steady_clock::time_point when;
    };
    // Lock order: after AggregatedSource::mutex_ and the file budget; before the remote
    // store's locks and netcdf_library_mutex (a dropped netCDF-4 file closes under it).
    mutable Mutex mutex_;
    LruCache<Key, Opened, KeyHash> entries_ NCAFS_GUARDED_BY(mutex_);
    std::unordered_map<std::string, RemoteSeen> remote_seen_ NCAFS_GUARDED_BY(mutex_);  // URL -> identity at its last open
    size_t opens_ NCAFS_GUARDED_BY(mutex_) = 0;
    uint64_t zarr_opens_ NCAFS_GUARDED_BY(mutex_) = 0;  // tells the opens of one store's URL apart
    std::unordered_map<std::string, std::shared_future<Opened>> zarr_opening_ NCAFS_GUARDED_BY(mutex_);  // stores being opened
    std::atomic<size_t> capacity_;  // entries_.capacity(), readable without mutex_
    // Local files open (counted ones); shared with them, as they may outlive the cache.
    std::shared_ptr<std::atomic<size_t>> files_open_ = std::make_shared<std::atomic<size_t>>(0);
    std::atomic<uint64_t> generation_{0};
    std::atomic<bool> serves_other_users_{false};
};

// The descriptors a process may spend on cached files: a quarter of the soft
// RLIMIT_NOFILE (the rest: FUSE, clients' reads, netcdf-c's own), at least 4.
size_t descriptor_budget();

}  // namespace ncafs::agg
