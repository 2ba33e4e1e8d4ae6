// The disk cache (cache_dir): blocks of remote objects, whole local copies
// and per-URL metadata, in folders only this process's user may enter
// (cache_folder.hpp: 0700 folders, 0600 files, every file reached from a
// folder's fd with O_NOFOLLOW|O_NONBLOCK) under names keyed with the cache's
// secret (cache_names.hpp). Several processes may share it (two mounts,
// `ncafs export`, `ncafs check`) and fill it at once: every file is written
// under a private temporary name and published by rename, and blocks and
// local copies end with a record of their name, length and SHA-256
// (cache_entry.hpp) checked before use, so readers see a whole entry of the
// right object and version or a miss. A local copy is published without
// replacing one another process published first (its readers keep theirs),
// and is read through the descriptor it was written by: another process
// evicting it cannot take it from under a reader. Least recently used files
// go first once the total passes the bound; eviction holds an flock on
// DIR/lock. Survives restarts: metadata lets open() work while the server
// is unreachable.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "remote/remote_block_cache.hpp"
#include "remote/cache_entry.hpp"
#include "remote/cache_folder.hpp"
#include "remote/cache_names.hpp"
#include "io/mutex.hpp"

namespace ncafs::remote {

struct ObjectMeta {
    std::string url;
    uint64_t size = 0;
    std::string etag, last_modified;
};

// URL and version together: the key of everything cached for one version.
std::string object_key(const std::string& url, const std::string& version);

// A whole object's local copy, open (its name is for messages only).
struct CachedObject {
    UniqueFd fd;
    struct stat st {};
    std::string path;
};

class DiskCache {
public:
    // Throws UsageError("cache_dir DIR: REASON") when the folder is refused
    // (cache_folder.hpp), SourceError when it cannot be used. `log` (empty:
    // stderr) gets one line per foreign file found and removed.
    DiskCache(std::string dir, uint64_t max_bytes, CacheLog log = {});

    std::optional<ObjectMeta> load_meta(const std::string& url) const;
    void store_meta(const ObjectMeta& meta);

    Block load_block(const std::string& key, uint64_t index, size_t length) const;
    void store_block(const std::string& key, uint64_t index, const std::vector<char>& data);

    // The local copy of object `key` when it holds `size` bytes sealed by
    // its record (its place in the LRU order refreshed); nullopt when it
    // must be fetched (a torn or foreign file there is removed).
    std::optional<CachedObject> open_object(const std::string& key, uint64_t size) const;
    // A new file (0600) to fetch an object into, then its publication: the
    // record of the `bytes` written (their SHA-256 in `seal`) appended, the
    // file synced and renamed into place unless another process published
    // that copy first. Returns the copy, open: ours, or the one published
    // first (ours when that one cannot be opened).
    TempFile create_temp() const { return folder_.create_temp(); }
    CachedObject publish_object(TempFile& temp, const std::string& key, uint64_t bytes, EntrySeal& seal);
    void discard(TempFile& temp) const { folder_.discard(temp); }

    uint64_t max_bytes() const { return max_bytes_; }
    const std::string& dir() const { return folder_.dir(); }

private:
    enum Sub : size_t { Meta, Blocks, Objects, Tmp };
    int sub(Sub s) const { return folder_.sub(s); }
    void write_file(Sub where, const std::string& name, const char* data, size_t n, bool sealed);
    // True when the local copy under `name` (fd) holds its record and the
    // bytes it describes; each (file, digest) is hashed once per process.
    bool copy_intact(int fd, const std::string& name, uint64_t size) const;
    void clear();
    void account(uint64_t bytes);
    void evict();
    void remove_stale_temporaries();

    CacheLog log_;
    CacheFolder folder_;
    UniqueFd lock_;
    CacheNames names_;
    uint64_t max_bytes_;
    std::atomic<uint64_t> used_{0};
    std::atomic<bool> evicting_{false};  // one thread evicts at a time: the flock does not exclude threads sharing lock_
    using Verified = std::tuple<dev_t, ino_t, Digest>;
    mutable Mutex verified_mutex_;  // lock order: a leaf
    mutable std::set<Verified> verified_ NCAFS_GUARDED_BY(verified_mutex_);
};

}  // namespace ncafs::remote
