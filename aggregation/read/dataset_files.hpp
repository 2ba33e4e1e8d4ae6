// The files a dataset draws on: the file it was read from (Dataset::origin)
// and, for an aggregation, every partition file its aggregated variables
// name (for a reference set, every local file its references name). Used by the FUSE layer to check that a caller could read them all
// directly, and to watch them for changes. Nothing here opens a file.
// Remote partitions (URLs) are not listed: no caller check or watch covers
// them (whoever may read the aggregation file may read them through it),
// and their version is checked on every read.
#pragma once

#include <string>
#include <vector>

#include "codecs/dataset.hpp"

namespace ncafs::agg {

// origin first, then the local partition paths (as resolved by the path policy,
// lexically absolute) in the order met, each once. Constant, missing and
// self fragments name no other file.
std::vector<std::string> files_drawn_on(const Dataset& dataset);

// True when some aggregated variable has a partition named by a URL.
bool draws_on_remote_objects(const Dataset& dataset);
// True when source aggregates a partition named by a URL.
bool draws_on_remote_objects(const ArraySource& source);

}  // namespace ncafs::agg
