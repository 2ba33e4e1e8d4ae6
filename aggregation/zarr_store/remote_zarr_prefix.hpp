// A Zarr store on an HTTP(S) server or in S3: its keys are objects under the
// store's URL, fetched by key through remote/ (the same allow_root= rules,
// caches, deadlines and version checks (If-Match) as remote partitions).
// Nothing is listed: chunk keys are computed from the grid, an object the
// server answers 404 for is absent (a chunk reads as fill), and the arrays
// of a group are named by the store root's consolidated metadata (v2
// `.zmetadata`, v3 `consolidated_metadata` in the root zarr.json; a
// sub-group's are its entries under the group's key), whose entries then
// answer for the metadata keys. Keys are checked (key_refusal) and each component
// is percent-encoded in an http(s) URL: no key leaves the store's URL.
// Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "aggregation/zarr_store/zarr_keys.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

class RemoteZarrPrefix final : public ZarrKeys {
public:
    // url: the store's root (http://, https:// or s3://), a trailing '/'
    // dropped; group: the key of a sub-group whose keys these are ("": the
    // root), listed by the root's consolidated metadata.
    explicit RemoteZarrPrefix(std::string url, std::string group = {});

    const std::string& path() const override { return url_; }
    // readers are ignored: the server decides who reads, not local modes.
    std::shared_ptr<const OpenFile> open(const std::string& key, const ZarrReaders* readers = nullptr,
                                         size_t trusted = 0) const override;
    // A metadata key the consolidated metadata holds (once read) is answered from it.
    std::optional<std::string> read(const std::string& key, uint64_t max_bytes) const override;
    // The names of the consolidated metadata; SourceError when there is none.
    bool for_each_subfolder(uint64_t max_entries,
                            const std::function<bool(const std::string&)>& visit) const override;

    // The object URL of a key (checked by key_refusal first).
    std::string url_of(const std::string& key) const;

private:
    // Reads the consolidated metadata into consolidated_ (once); false when the store has none.
    bool load_consolidated() const;
    // The consolidated entries of the root (full keys), or nullopt.
    std::optional<std::unordered_map<std::string, std::string>> root_entries() const;
    // The object at url, cached under cache_key for kRemoteRevalidate.
    std::shared_ptr<const OpenFile> open_url(const std::string& url, const std::string& cache_key) const;
    std::string root_, group_, url_;
    struct Opened {
        std::shared_ptr<const OpenFile> file;  // null: absent (404)
        std::chrono::steady_clock::time_point when;
    };
    mutable Mutex mutex_;  // a leaf: no fetch under it
    mutable LruCache<std::string, Opened> opens_ NCAFS_GUARDED_BY(mutex_){1024};
    mutable std::once_flag consolidated_once_;
    mutable std::optional<std::unordered_map<std::string, std::string>> consolidated_;  // key -> JSON text
};

// True when a name (path or URL) names a Zarr store: its last component,
// without a trailing '/', ends in ".zarr".
bool names_zarr_store(const std::string& name);

}  // namespace ncafs::agg
