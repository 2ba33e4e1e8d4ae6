// Bounds on what one aggregation file may make the daemon hold or do, so that
// a small hostile file cannot amplify into gigabytes (docs/security.md "Hostile input"). Each
// is an -o option of the mount (fs/options.cpp); exceeding one is an
// AggregationError naming the file and the limit.
#pragma once

#include <cstdint>

namespace ncafs::agg {

struct AggregationLimits {
    // Fragments (partitions) of one aggregated variable. The project targets
    // 1,000,000-partition aggregations; each fragment costs a few hundred bytes.
    uint64_t max_fragments = 2'000'000;
    // Bytes of aggregation metadata text (nca_array/cfa_array JSON,
    // aggregated_data/aggregated_dimensions) of one variable.
    uint64_t max_metadata_bytes = uint64_t{256} << 20;
};

}  // namespace ncafs::agg
