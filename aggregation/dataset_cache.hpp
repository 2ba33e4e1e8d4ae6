// Bounded cache of opened datasets (partition files and aggregation files),
// keyed by (device, inode, mtime, size): a file that changed is looked up
// under a new key and reopened; the stale entry ages out. Least recently used
// entries are dropped beyond the capacity (readers holding a shared_ptr keep
// theirs alive until done). Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "codecs/dataset.hpp"
#include "codecs/open_file.hpp"

namespace ncafs::agg {

class DatasetCache {
public:
    explicit DatasetCache(size_t capacity = 256);

    // The dataset at path as it is now; opens it (open_dataset) on a miss.
    // With `group` ("/a/b"), the dataset of that netCDF-4 group (its
    // variables and the dimensions visible from it), for fragment variables
    // inside groups. Throws SourceError naming the path when it is missing or
    // unreadable.
    std::shared_ptr<const Dataset> get(const std::string& path, const std::string& group = {});

    // Lowers or raises the bound (the mount's open_files=); drops the least
    // recently used entries beyond it.
    void set_capacity(size_t capacity);

    size_t size() const;
    size_t opens() const;  // number of files opened so far (for tests and benchmarks)

    // The process-wide cache used by open_aggregation.
    static DatasetCache& shared();

private:
    using Key = std::tuple<dev_t, ino_t, int64_t, uint64_t, std::string>;
    struct Entry {
        std::shared_ptr<const Dataset> dataset;
        std::list<Key>::iterator lru;
    };
    size_t capacity_;
    mutable std::mutex mutex_;
    std::map<Key, Entry> entries_;
    std::list<Key> lru_;  // most recent first
    size_t opens_ = 0;
};

}  // namespace ncafs::agg
