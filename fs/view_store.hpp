// The catalog's store of datasets and views (fs/catalog.hpp): the parsed
// datasets of the mount's dataset files, their built views and what is
// known of views not built (sizes; verdicts: a view that cannot be built is
// never listed), which datasets do not parse, which have LOD views, which
// draw on remote objects, and the files each draws on. Every answer is
// cached by the file's identity (fs/cache_keys.hpp), bounded; parsing and
// building run outside the lock.
#pragma once

#include <sys/stat.h>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/virtual_file.hpp"
#include "fs/backend.hpp"
#include "fs/cache_keys.hpp"
#include "fs/catalog_entry.hpp"
#include "fs/options.hpp"
#include "io/confined_open.hpp"
#include "io/error.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

// A file that was another one by the time its dataset was opened: not
// served now (the next lookup sees the new file).
class SourceChangedError : public SourceError {
public:
    explicit SourceChangedError(const std::string& file)
        : SourceError(file, "changed while it was being opened: not served (try again)") {}
};

// Whether a failure may pass by itself (descriptors or memory short, a file
// changing meanwhile), told by its type and the errno it carries, never by
// its text: such a failure is not remembered as the view's verdict.
bool failure_may_pass(const std::exception& failure);

class ViewStore {
public:
    // `source`, `options` and `backend` are the catalog's and outlive the store.
    ViewStore(const ConfinedRoots& source, const ViewOptions& options, const Backend& backend);

    // Bound of the caches of opened datasets and views (open_files=, RLIMIT_NOFILE).
    size_t open_capacity() const { return open_capacity_; }

    // The dataset of the file, from the cache or parsed; throws when it cannot
    // be read, SourceChangedError when path gave another file meanwhile.
    std::shared_ptr<const Dataset> dataset(const std::string& path, const struct stat& st, bool aggregation);
    // The dataset a view of LOD `lod` shows (lod 0: the file's own).
    std::shared_ptr<const Dataset> dataset_at(const std::string& path, const struct stat& st, bool aggregation,
                                              int lod);
    // The dataset of the file; null when it cannot be read (logged once per
    // file), `remembered` false when the cause may pass (EMFILE...).
    std::shared_ptr<const Dataset> readable_dataset(const std::string& path, const struct stat& st, bool aggregation,
                                                    bool& remembered);
    // Keeps what classifying an aggregation opened: its dataset and nc view.
    void keep_aggregation(const FileKey& file, std::shared_ptr<const Dataset> dataset,
                          std::shared_ptr<const VirtualFile> nc_view);

    // The view of a View entry of a file view, from the cache or built; throws on failure.
    // epoch: the access generation its opener was judged at (ViewKey::epoch).
    std::shared_ptr<const VirtualFile> view_of(const Entry& view_entry, uint64_t epoch = 0);
    // Whether the view of entry v (view fields set) can be served: from the
    // caches of sizes and verdicts, else by building it (v.size set), or,
    // when !need_size and the backend has a cheap verdict for the view
    // (vds), from that.
    bool view_servable(Entry& v, bool need_size = true);
    // The verdict remembered for the view of v (true: it can be served), or nullopt.
    std::optional<bool> verdict(const Entry& v);
    void remember_verdict(const Entry& v, bool servable);

    // True when the dataset at path has LOD views: a variable of rank >= 2,
    // and an aggregation or more than lod_min_size bytes of values; false,
    // logged, when it cannot be read. Cached by identity.
    bool dataset_has_lods(const std::string& path, const struct stat& st, bool aggregation);
    // For a View of an aggregation: whether a partition is a remote object.
    bool draws_on_remote(const Entry& entry);
    // Every file a non-directory entry draws on: the real file, or a view's
    // source and (aggregation, store folder) the files it reads.
    std::shared_ptr<const std::vector<std::string>> source_files(const Entry& entry);

    // Datasets opened (parsed), for tests and logging.
    size_t dataset_open_count() const;

private:
    // The backend's cheap verdict on v's view, remembered; nullopt when it has none.
    std::optional<bool> judge_cheaply(const Entry& v);
    // Builds the view of v for its size; false, logged and (unless the cause
    // may pass, such as EMFILE) remembered as refused, when it cannot be made.
    bool size_view(Entry& v);

    const ConfinedRoots& source_;
    const ViewOptions& options_;
    const Backend& backend_;
    size_t open_capacity_;

    // A leaf lock: held only to look up or keep an answer, never while
    // parsing, building, or calling another part of the catalog. A dropped
    // dataset may close a netCDF-4 file under it (library_mutex).
    mutable Mutex mutex_;
    template <typename Key, typename Value>
    using Lru = LruCache<Key, Value, CacheKeyHash>;
    Lru<ViewKey, uint64_t> view_sizes_ NCAFS_GUARDED_BY(mutex_);
    Lru<ViewKey, bool> view_verdicts_ NCAFS_GUARDED_BY(mutex_);  // false: cannot be built (never listed); true: a cheap verdict said it can
    Lru<DatasetKey, bool> lod_datasets_ NCAFS_GUARDED_BY(mutex_);     // dataset_has_lods
    Lru<DatasetKey, bool> remote_datasets_ NCAFS_GUARDED_BY(mutex_);  // draws_on_remote
    Lru<DatasetKey, bool> unreadable_ NCAFS_GUARDED_BY(mutex_);       // datasets that do not parse
    Lru<DatasetKey, std::shared_ptr<const Dataset>> datasets_ NCAFS_GUARDED_BY(mutex_);
    Lru<ViewKey, std::shared_ptr<const VirtualFile>> views_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, std::shared_ptr<const std::vector<std::string>>> source_files_ NCAFS_GUARDED_BY(mutex_);
    size_t dataset_open_count_ NCAFS_GUARDED_BY(mutex_) = 0;
};

}  // namespace ncafs::fs
