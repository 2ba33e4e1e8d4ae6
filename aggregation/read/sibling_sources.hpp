// The aggregated variables of one loaded aggregation file, known to each
// other: a coordinate of one value a fragment (a CF-1.13 `time`) opens
// every partition for that value, and the partitions' other variables are
// most often read next (a view's first computed block holds the header and
// the coordinate's first values; a point series then reads the data
// variable from the same files). While such a file is open, the small
// fragments the other variables have in it are read too and kept
// (aggregation/read/kept_fragment_values.hpp), so that the file is not
// opened a second time for them. Thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "io/mutex.hpp"

namespace ncafs::agg {

class AggregatedSource;

class SiblingSources {
public:
    void add(const std::shared_ptr<const AggregatedSource>& source);
    // Every source added and still alive but `self`.
    std::vector<std::shared_ptr<const AggregatedSource>> others(const AggregatedSource* self) const;

private:
    mutable Mutex mutex_;
    std::vector<std::weak_ptr<const AggregatedSource>> sources_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::agg
