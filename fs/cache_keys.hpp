// The keys of the catalog's caches, as types rather than strings built by
// hand: a file is its path and identity (device, inode, size, mtime, ctime:
// a changed file is another key); a dataset adds how it was read; a view adds
// its kind (and, for ncs, the name its header records).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <string>

#include "fs/view_registry.hpp"
#include "io/open_file.hpp"

namespace ncafs::fs {

// The bound of each of the catalog's caches of small answers (classifications,
// sniffs, view sizes and verdicts...): ~100 bytes an entry.
inline constexpr size_t kClassificationCapacity = 200000;

// The kind of a view extension (fs/view_registry.hpp); throws UsageError for an unknown one.
ViewKind view_kind_of(const std::string& view);

struct FileKey {
    std::string path;
    FileIdentity identity;
    bool operator==(const FileKey&) const = default;
};

// The key of the file at path as `st` (its stat) describes it.
inline FileKey file_key(const std::string& path, const struct stat& st) { return FileKey{path, identity_from_stat(st)}; }

struct DatasetKey {
    FileKey file;
    bool aggregation = false;  // read as an aggregation, or as the file's own dataset
    bool operator==(const DatasetKey&) const = default;
};

struct ViewKey {
    DatasetKey dataset;
    ViewKind kind = ViewKind::Nc;
    std::string name;  // for a format that records its name (ncs); empty for the others
    int lod = 0;       // LOD level (fs options lods=): 0 is the full dataset
    // Opened views only: the access generation their openers were judged at
    // (fs/filesystem.hpp): a view object, and what it caches, serves callers
    // judged against the same files only. 0 for sizes and verdicts.
    uint64_t epoch = 0;
    bool operator==(const ViewKey&) const = default;
};

struct CacheKeyHash {
    size_t operator()(const FileKey& k) const;
    size_t operator()(const DatasetKey& k) const;
    size_t operator()(const ViewKey& k) const;
};

}  // namespace ncafs::fs
