// The disk cache (cache_dir): blocks of remote objects, whole local copies
// and per-URL metadata, as files named by a hash of URL (+ version). Every
// file is written under a temporary name and renamed, so readers (also in
// another mount sharing the directory) see whole files or none. Least
// recently used files go first once the total passes the bound; eviction
// holds an flock on DIR/lock. A file that does not have its expected size is
// ignored and removed. Survives restarts: metadata lets open() work while
// the server is unreachable.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "remote/block_cache.hpp"

namespace ncafs::remote {

struct ObjectMeta {
    std::string url;
    uint64_t size = 0;
    std::string etag, last_modified;
};

// URL and version together: the key of everything cached for one version.
std::string object_key(const std::string& url, const std::string& version);

class DiskCache {
public:
    // Throws SourceError(dir, reason) when the directory cannot be used.
    DiskCache(std::string dir, uint64_t max_bytes);

    std::optional<ObjectMeta> load_meta(const std::string& url) const;
    void store_meta(const ObjectMeta& meta);

    Block load_block(const std::string& key, uint64_t index, size_t length) const;
    void store_block(const std::string& key, uint64_t index, const std::vector<char>& data);

    // Where local_copy keeps a whole object; exists() checks size and
    // refreshes its place in the LRU order.
    std::string object_path(const std::string& key) const;
    bool exists(const std::string& path, uint64_t size) const;
    // A new temporary file name in the cache directory, and its publication.
    std::string temp_path() const;
    void publish(const std::string& temp, const std::string& path, uint64_t bytes);

    uint64_t max_bytes() const { return max_bytes_; }
    const std::string& dir() const { return dir_; }

private:
    void write_file(const std::string& path, const char* data, size_t n);
    void account(uint64_t bytes);
    void evict();

    std::string dir_;
    uint64_t max_bytes_;
    std::atomic<uint64_t> used_{0};
};

}  // namespace ncafs::remote
