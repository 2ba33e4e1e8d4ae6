// `ncafs aggregate --format kerchunk`: the same aggregation `aggregate`
// writes as CF-1.13, written into a private (0700) folder made beside OUT,
// read back as the mount reads it, and emitted as a reference set
// (aggregation/kerchunk_export, the writer of `export --format kerchunk`)
// written there too and renamed over OUT; the folder is removed.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "aggregation/write/cf_writer.hpp"

namespace ncafs::cli {

// options.output: the reference set's path. Notes go to err. Throws as
// write_cf_aggregation does, and SourceError when OUT cannot be written.
agg::AggregateSummary write_kerchunk_aggregation(const std::vector<std::string>& files,
                                                 agg::AggregateWriterOptions options, bool inline_converted,
                                                 std::ostream& err);

}  // namespace ncafs::cli
