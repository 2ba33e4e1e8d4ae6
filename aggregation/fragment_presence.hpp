// Whether the partition files of a presented aggregation are all there: one
// access(2) per distinct fragment file, nothing opened. The FUSE layer serves
// a view with an absent partition with direct I/O (see README, "Missing
// partitions"), so that no read(2) can come back short over the gap.
#pragma once

#include <optional>
#include <string>

#include "codecs/dataset.hpp"

namespace ncafs::agg {

// The first fragment file of ds's aggregated variables that cannot be read
// (absent or unreadable), or nullopt when all can; nullopt for datasets
// that are no aggregation.
std::optional<std::string> first_absent_fragment_file(const Dataset& ds);

}  // namespace ncafs::agg
