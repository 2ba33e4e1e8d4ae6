// The check behind `ncafs check FILE`: loads the aggregation, validates it
// (CF generations: docs/conventions/README.md "Validation"), opens and
// verifies every fragment (exists, inside allowed roots, readable, variable
// present, shape, type, units) and reports uncovered cells. Never throws for
// bad input: every finding becomes a line naming the file and the reason.
#pragma once

#include <string>
#include <vector>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"

namespace ncafs::agg {

struct CheckFinding {
    bool problem = false;  // a problem fails the check; otherwise a warning
    std::string text;      // "FILE: reason"
};

// Findings in the order they were made.
std::vector<CheckFinding> check_aggregation_file(const std::string& file, const AggregationOptions& options,
                                                 DatasetCache& cache, bool verify_coordinates);

}  // namespace ncafs::agg
