// What the catalog (fs/catalog.hpp) answers for a virtual path: an Entry
// (a directory, a real file, a view or a folder of a folder view), and the
// names of a listed directory (DirEntry). Shared by the catalog's parts.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "fs/cache_keys.hpp"
#include "fs/view_registry.hpp"
#include "io/open_file.hpp"

namespace ncafs::fs {

enum class EntryKind { Directory, RealFile, View, ViewFolder };

struct Entry {
    EntryKind kind = EntryKind::RealFile;
    std::string real_path;  // the directory, the real file, or the aggregation file
    ViewKind view_kind = ViewKind::Nc;  // for View and ViewFolder: the view's format (fs/view_registry.hpp)
    std::string name;       // for View: the virtual file name (NAME.ncs records it); in a folder view: its path from the folder's parent
    bool aggregation = false;  // for View: real_path is an aggregation file
    int lod = 0;            // for View: LOD level of NAME.lodN.EXT (0: the full dataset)
    struct stat st {};      // stat of real_path (symlinks followed)
    uint64_t size = 0;      // bytes served (the view's size for View)

    FileIdentity identity() const { return identity_from_stat(st); }
    // The cache keys of real_path as `st` describes it, of its dataset, and
    // (View, ViewFolder) of its view: the name is part of it only for a
    // format that records it (ncs).
    FileKey file_key() const { return FileKey{real_path, identity()}; }
    DatasetKey dataset_key() const { return DatasetKey{file_key(), aggregation}; }
    ViewKey view_key() const {
        return ViewKey{dataset_key(), view_kind, view_format(view_kind).records_name ? name : std::string(), lod};
    }
};

struct DirEntry {
    std::string name;
    bool directory = false;
};

}  // namespace ncafs::fs
