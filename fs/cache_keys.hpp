// The keys of the catalog's caches, as types rather than strings built by
// hand: a file is its path and identity (device, inode, size, mtime, ctime:
// a changed file is another key); a dataset adds how it was read; a view adds
// its kind (and, for ncs, the name its header records).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "fs/view_registry.hpp"
#include "io/open_file.hpp"

namespace ncafs::fs {

// The kind of a view extension (fs/view_registry.hpp); throws UsageError for an unknown one.
ViewKind view_kind_of(const std::string& view);

struct FileKey {
    std::string path;
    FileIdentity identity;
    bool operator==(const FileKey&) const = default;
};

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
