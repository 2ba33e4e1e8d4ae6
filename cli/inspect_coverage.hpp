// The coverage map `ncafs inspect` shows per master array: for each
// aggregated dimension its coordinate range and a bar of covered, missing
// (file absent) and uncovered cells. Judged from metadata and stat alone:
// no partition is opened.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"

namespace ncafs::agg {
class AggregatedSource;
}

namespace ncafs::cli {

struct DimensionCoverage {
    std::string name;
    uint64_t length = 0;
    std::optional<double> first, last;   // coordinate values at both ends (a coordinate in the aggregation file)
    std::optional<std::string> first_date, last_date;  // decoded with its calendar ("X since DATE" units)
    std::string bar;  // '#' covered, '.' file missing or refused, ' ' uncovered; at most kBarCells cells
    size_t partitions = 0, missing = 0;  // distinct partition ranges along the dimension; those with a '.' file
};

inline constexpr size_t kBarCells = 60;

// The partition files an array names, stat'ed through the aggregation's
// confinement (never opened, never a stat outside it); remote URLs are counted
// but not judged.
struct FileCensus {
    size_t files = 0, present = 0;
    uint64_t bytes = 0;               // on disk, of the present ones
    std::set<std::string> missing;    // absent, or not stat'able
    std::set<std::string> refused;    // outside the allowed roots (may exist)
    // Both: the cells they hold cannot be read.
    std::set<std::string> unreadable() const;
};
FileCensus file_census(const agg::AggregatedSource& source);

// One entry per dimension the partitions split; cells of `unreadable` files
// are drawn '.'.
std::vector<DimensionCoverage> coverage_map(const agg::AggregatedSource& source, const Dataset& presented,
                                            const std::set<std::string>& unreadable);

// "time  2000-01-16..2002-12-16  [####.#####   ] 36 partitions, 1 missing"
std::string coverage_line(const DimensionCoverage& c);

}  // namespace ncafs::cli
