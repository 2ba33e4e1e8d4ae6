// Bounds on what one aggregation file may make the daemon hold or do, so that
// a small hostile file cannot amplify into gigabytes (docs/security.md "Hostile input"). Each
// is an -o option of the mount (fs/options.cpp); exceeding one is an
// AggregationError naming the file and the limit.
#pragma once

#include <cstdint>

#include "io/metadata_budget.hpp"

namespace ncafs::agg {

// What a partition or fragment costs the daemon at the peak of loading it
// (partition table row, grid cell, file name, read slot and the parse's
// temporaries: simdjson's structural index of an NCA partition, ~200
// bytes), counted against the file's metadata budget before the fragments
// are built. Measured as the growth of the daemon's peak RSS per added
// partition (docs/performance.md "Memory per partition"): NCA 502 bytes, of
// which its ~150 bytes of JSON text are charged already (attribute bytes of
// the aggregation file); CF-1.13 200 bytes a partition of two fragments,
// beside its term variables' bytes (charged as read). Rounded up.
inline constexpr uint64_t kPartitionCost = 384;  // NCA / CFA-0.4 JSON partitions
inline constexpr uint64_t kFragmentCost = 128;   // CF-style fragments (one per aggregated variable)

struct AggregationLimits {
    // Fragments (partitions) of one aggregated variable. The project targets
    // 1,000,000-partition aggregations; a loaded partition costs the daemon at most
    // 600 (NCA) to 800 (CF-1.13) bytes in all (tests/e2e/test_scale_memory.py).
    uint64_t max_fragments = 2'000'000;
    // Bytes of aggregation metadata text (nca_array/cfa_array JSON,
    // aggregated_data/aggregated_dimensions) of one variable.
    uint64_t max_metadata_bytes = uint64_t{256} << 20;
};

}  // namespace ncafs::agg
