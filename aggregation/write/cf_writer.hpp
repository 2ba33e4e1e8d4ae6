// Writes a CF-1.13 aggregation file (map / uris / identifiers feature
// variables) from partition files that tile along one or more dimensions.
// Reads the partitions' headers, and the values of their coordinate variables
// along the aggregated dimensions (to order the fragments) and of their small
// non-aggregated variables (to prove them equal); never the aggregated data.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codecs/error.hpp"

namespace ncafs::agg {

struct AggregateWriterOptions {
    std::vector<std::string> dims;  // aggregated dimensions; empty: the first file's unlimited dimension
    bool absolute_uris = false;     // file:///abs/path URIs instead of paths relative to the output
    bool classic = false;           // netCDF-3 (CDF-2, or CDF-5 for its types) with char feature variables
    std::string output;
    std::function<void(size_t done, size_t total)> progress;  // after each file read; may be empty
};

struct AggregateSummary {
    size_t files = 0;
    size_t aggregation_variables = 0;  // including aggregation coordinate variables
    size_t non_aggregated_variables = 0;
    std::vector<uint64_t> fragments_per_dim;  // in options.dims order
    std::vector<std::string> warnings;        // differences that CF canonicalisation absorbs
};

// Thrown when the inputs do not tile or disagree; what() lists every
// difference found, one per line ("FILE: reason").
class AggregateInputError : public Error {
public:
    explicit AggregateInputError(const std::string& lines) : Error(lines) {}
};

// Throws AggregateInputError (inputs), UsageError (options) or SourceError
// (unreadable input, output not writable). Writes nothing on error.
AggregateSummary write_cf_aggregation(const std::vector<std::string>& files, const AggregateWriterOptions& options);

// Percent-encodes what a URI path may not hold verbatim (RFC 3986).
std::string uri_path_encode(const std::string& path);

}  // namespace ncafs::agg
