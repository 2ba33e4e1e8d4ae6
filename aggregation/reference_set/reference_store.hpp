// The bytes behind the keys of a reference set: inline, or read from the
// objects its URLs name through the same confined, allow-listed paths as
// aggregation partitions (PathPolicy: a relative URL against the reference
// file's folder, local paths only beneath the allowed roots, opened from a
// root's fd without following a symlink out; http(s):// and s3:// URLs
// through remote/, only under allow_root= URLs). Every range is checked
// against the object's size and the caller's bound before a byte is read.
// Decoded chunks are kept in a process-wide cache bounded in bytes. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/read/path_policy.hpp"
#include "aggregation/reference_set/reference_parser.hpp"
#include "io/lru_cache.hpp"
#include "io/open_file.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

class ReferenceStore {
public:
    ReferenceStore(ReferenceSet set, std::shared_ptr<const PathPolicy> paths);
    virtual ~ReferenceStore() = default;  // a Zarr directory store finds its chunks itself (aggregation/zarr_store)

    // The reference file (a Zarr store: its folder or URL), for messages.
    virtual const std::string& file() const { return paths_->aggregation_file(); }
    bool contains(const std::string& key) const { return set_.refs.count(key) != 0; }
    // Every key (for listing arrays).
    const ReferenceSet& references() const { return set_; }

    // The bytes of key (nullopt when the key is absent). Throws SourceError
    // naming the reference file, the key and the reason when the bytes are
    // refused (outside the allowed roots, beyond the object's end, more than
    // max_bytes) or unreadable.
    std::optional<std::vector<uint8_t>> fetch(const std::string& key, uint64_t max_bytes) const;
    // The bytes of a metadata key (.zgroup, .zattrs, NAME/.zarray...), which
    // must be inline: metadata decides sizes and listings, which may not
    // depend on other files (docs/security.md). A reference to another
    // object throws SourceError with the reason (nullopt when absent).
    std::optional<std::vector<uint8_t>> inline_metadata(const std::string& key, uint64_t max_bytes) const;

    // A tag of the bytes behind key as they are now (the referenced file's
    // identity and range, or "inline"), for cache keys; nullopt when absent.
    // Opens the object: the bytes then come from the file just opened.
    struct Located {
        std::string tag;
        std::shared_ptr<const OpenFile> file;  // null for inline bytes
        uint64_t offset = 0, length = 0;
    };
    virtual std::optional<Located> locate(const std::string& key, uint64_t max_bytes) const;
    // Whether the chunks lie in files other than the store's own even where no reference names one.
    virtual bool chunks_in_other_files() const { return false; }
    virtual std::vector<uint8_t> read(const std::string& key, const Located& where) const;

    // For `ncafs check`: every reference to another object tried without
    // reading its bytes (URL allowed, object opened, range inside it), one
    // open per URL. At most max_reports lines, "FILE: reference "KEY": REASON",
    // then one line counting the rest.
    std::vector<std::string> verify(size_t max_reports) const;

    // The local files the references name (resolved and allowed), each once.
    std::vector<std::string> local_files() const;
    bool names_remote_objects() const;

private:
    std::shared_ptr<const OpenFile> open_object(const std::string& key, uint32_t url) const;
    // A remote object opened less than DatasetCache::kRemoteRevalidate ago
    // and not seen replaced since, else opened now (one HEAD per object and
    // interval, not per chunk).
    std::shared_ptr<const OpenFile> open_remote(const std::string& url_text, uint32_t url) const;
    struct RemoteOpen {
        std::shared_ptr<const OpenFile> file;
        std::chrono::steady_clock::time_point when;
    };
    mutable Mutex remote_mutex_;
    mutable LruCache<uint32_t, RemoteOpen> remote_opens_ NCAFS_GUARDED_BY(remote_mutex_){64};
    [[noreturn]] void refuse(const std::string& key, const std::string& reason) const;
    ReferenceSet set_;
    std::shared_ptr<const PathPolicy> paths_;
    std::vector<std::string> resolved_;  // per URL: the path or URL; "" when refused
    std::vector<std::string> refusals_;  // per URL: why it is refused
};

}  // namespace ncafs::agg
