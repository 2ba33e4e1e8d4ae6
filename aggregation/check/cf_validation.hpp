// Validation of G3-G5 aggregation files (docs/conventions/README.md
// "Validation"), for `ncafs check`: metadata rules (names exist, map rows count the
// aggregated dimensions, term variables span the fragment dimensions - these
// three are enforced by the parser and come back as its error), boxes tile
// the aggregated array, every fragment opens and conforms (variable, shape
// after size-1 alignment, equivalent units and calendars, type), and, on
// request, fragment coordinates against the aggregation's own (A9:
// fragments listed out of order). One problem per line, naming file and reason.
#pragma once

#include <string>
#include <vector>

#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/terms/cf_fragment_source.hpp"
#include "aggregation/read/dataset_cache.hpp"

namespace ncafs::agg {

struct CfCheckReport {
    std::vector<std::string> problems;  // "FILE: reason" - any makes the check fail
    std::vector<std::string> warnings;  // "FILE: reason" - oddities that do not stop reading
    size_t aggregates = 0, fragments = 0, fragments_opened = 0;
};

// True when the file holds at least one CF-style aggregation variable
// (cheap: header only).
bool has_cf_aggregation_variables(const Dataset& file);

// Checks one aggregation file. `verify_coordinates`: also compare each
// fragment's coordinate values with the aggregation's coordinate variable
// along every aggregated dimension, and check that aggregated coordinates are
// monotonic. Never throws for bad input: everything becomes a problem line.
CfCheckReport check_cf_aggregation(const std::string& path, const AggregationOptions& options, DatasetCache& cache,
                                   bool verify_coordinates);

// Section 6 tiling rule alone: gaps and overlaps of the fragment boxes.
std::vector<std::string> check_tiling(const Aggregate& a);

// A9 alone: compares fragment coordinates with `master_coordinate` (the
// aggregation's values along aggregated dimension `dim`, in `units` /
// `calendar`). Reads only the fragments' coordinate variables.
std::vector<std::string> verify_fragment_coordinates(const CfAggregate& a, size_t dim, const std::string& coordinate_name,
                                                     const std::vector<double>& master_coordinate,
                                                     const std::string& units, const std::string& calendar,
                                                     DatasetCache& cache);

}  // namespace ncafs::agg
