// How the catalog (fs/catalog.hpp) tells the files of SOURCE apart: the
// magic sniff of a dataset name, the header pre-check of a would-be
// aggregation, the full classification (no dataset, aggregation, broken
// aggregation, dataset), the netCDF-4 test, and the store folders
// (NAME.vds/, NAME.zarr/). Every answer is cached by the file's path and
// identity (fs/cache_keys.hpp), bounded; every file is opened or stat'ed
// from SOURCE's fd with every component confined (io/confined_open.hpp).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fs/backend.hpp"
#include "fs/cache_keys.hpp"
#include "fs/options.hpp"
#include "io/confined_open.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

class ViewStore;

// How a regular file is served.
struct Classification {
    // NoDataset: a real file only; Aggregation; Broken: looks like an
    // aggregation but cannot be served as one (a real file only, no twins: a
    // view of the aggregation file's own variables would mislead); Dataset: a
    // netCDF, ds or ncstream file.
    enum Kind { NoDataset, Aggregation, Broken, Dataset } kind = NoDataset;
    uint64_t nc_size = 0;  // size of the nc view (Aggregation)
    bool is_dataset() const { return kind == Aggregation || kind == Dataset; }
};

class FileClassifier {
public:
    // `source`, `options`, `backend` and `views` are the catalog's and outlive
    // the classifier; what classifying an aggregation opens is kept in `views`.
    FileClassifier(const ConfinedRoots& source, const ViewOptions& options, const Backend& backend, ViewStore& views);

    // stat following symlinks, but only when the final target lies inside SOURCE.
    bool stat_within_source(const std::string& path, struct stat& st) const;
    // A folder NAME.vds holding a VolumeDataLayout file (an OpenVDS volume in
    // the object-store directory form) or NAME.zarr holding .zgroup, .zarray
    // or zarr.json (a Zarr store): shown as NAME.nc/.ds/.ncs/.vds, not as a folder.
    bool is_store_directory(const std::string& name, const std::string& path) const;
    // The reader the file's first bytes call for (JSON other than a reference set: None).
    SourceFormat sniff(const std::string& path, const struct stat& st);
    // The full classification; an aggregation's dataset and nc view are opened to know.
    Classification classify(const std::string& path, const struct stat& st);
    // precheck_aggregation (aggregation/read/precheck.hpp) of the file,
    // opened confined; cached when the opened file is the one `st` describes.
    bool may_be_aggregation(const std::string& path, const struct stat& st);
    // HDF5 signature at offset 0 (a netCDF-4 file; cached like the sniff).
    bool is_netcdf4(const std::string& path, const struct stat& st);

    // Counters for tests and logging: full classifications, magic sniffs, aggregation pre-checks.
    size_t classification_count() const;
    size_t sniff_count() const;
    size_t precheck_count() const;

private:
    // Names that are datasets only as reference sets: *.json and refs=GLOB names.
    bool only_reference_sets(const std::string& path) const;

    const ConfinedRoots& source_;
    const ViewOptions& options_;
    const Backend& backend_;
    ViewStore& views_;

    // A leaf lock: held only to look up or keep an answer, never while a file
    // is read or another part of the catalog is called.
    mutable Mutex mutex_;
    template <typename Key, typename Value>
    using Lru = LruCache<Key, Value, CacheKeyHash>;
    Lru<FileKey, Classification> classifications_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, SourceFormat> formats_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, bool> netcdf4_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, bool> prechecks_ NCAFS_GUARDED_BY(mutex_);  // "may be an aggregation" (the header pre-check)
    size_t classification_count_ NCAFS_GUARDED_BY(mutex_) = 0;
    size_t sniff_count_ NCAFS_GUARDED_BY(mutex_) = 0;
    size_t precheck_count_ NCAFS_GUARDED_BY(mutex_) = 0;
};

}  // namespace ncafs::fs
