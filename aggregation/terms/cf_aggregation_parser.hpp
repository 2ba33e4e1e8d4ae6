// Parser for the term-variable aggregation generations (docs/conventions/
// cfa-0.6.md, cf-drafts.md, cf-1.13.md): G3 CFA-0.6/0.6.1/0.6.2 (location/file/format/
// address), G4a the 2024 CF draft (shape/location/address[/value]), G4b cfdm
// 1.12.0-1.12.1 (map/location/variable | map/unique_value) and G5 CF-1.13
// (map/uris/identifiers | map/unique_values). The generation is detected from
// the keyword set of `aggregated_data`, never from Conventions (A10).
// Metadata only: the aggregation file's own term variables are read (with
// netcdf-c), no fragment file is opened. Output: the one internal model
// (aggregate.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aggregation/model/limits.hpp"
#include "aggregation/model/aggregate.hpp"
#include "aggregation/read/path_policy.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg {

enum class CfGeneration {
    Cfa06,      // G3: location (sizes), file, format, address
    Draft2024,  // G4a: shape (sizes), location (names), address, value
    Cfdm112,    // G4b: map, location (names), variable | map, unique_value
    Cf113,      // G5: map, uris, identifiers | map, unique_values
};
std::string_view generation_label(CfGeneration g);

// A variable carrying both aggregated_dimensions and aggregated_data.
bool is_cf_aggregation_variable(const Variable& v);

// Per fragment: why it cannot be read ("" when nothing is known to be
// wrong). Only the fragments with a problem are stored: a million good
// ones cost nothing here.
class FragmentProblems {
public:
    void push_back(std::string problem);  // the next fragment's
    uint64_t size() const { return size_; }
    const std::string& operator[](uint64_t fragment) const;

private:
    uint64_t size_ = 0;
    std::vector<std::pair<uint64_t, std::string>> problems_;  // by fragment, increasing
};

struct CfAggregate {
    Aggregate aggregate;
    CfGeneration generation = CfGeneration::Cf113;
    // Per fragment: why it cannot be read ("" when nothing is known to be
    // wrong). Raised when the fragment is read or checked, never while
    // listing: unsupported URI schemes, non-netCDF formats, paths outside the
    // allowed roots, missing uris/identifiers values.
    FragmentProblems fragment_problems;
    std::vector<std::string> term_variables;  // full paths ("/aggregation/location")
};

struct CfAggregations {
    std::vector<CfAggregate> aggregates;
    // Root-group names the presented dataset must not show: every term /
    // feature variable, every in-file fragment variable, and the dimensions
    // only those use (fragment dims, map dims, string-length dims).
    std::vector<std::string> hidden_variables;
    std::vector<std::string> hidden_dimensions;
    std::vector<std::string> warnings;  // "VAR:aggregated_data: ..." oddities that did not stop parsing
};

// Parses every CF-style aggregation variable of `file` (the aggregation
// file's own dataset, read from `path`). Throws AggregationError naming the
// file, "VAR:aggregated_data TERM" and the reason for metadata that cannot
// describe an aggregation; SourceError when the file cannot be read.
CfAggregations parse_cf_file(const std::string& path, const Dataset& file, const PathPolicy& paths,
                             const AggregationLimits& limits = AggregationLimits{});

// The same, reduced to the aggregates (for callers that keep no side table).
std::vector<Aggregate> parse_cf_aggregations(const std::string& path, const Dataset& file, const PathPolicy& paths);

// Resolution of one fragment name (URI or path), docs/conventions/cf-1.13.md "uris":
// file:// URIs and absolute paths accepted, relative references resolved
// against the aggregation file's folder, http(s):// and s3:// URIs kept as
// URLs (after rewrites: PathPolicy::resolve), any other scheme refused. `path` is
// the resolved path (or the name as given when `problem` is set).
struct ResolvedName {
    std::string path;
    std::string problem;
};
ResolvedName resolve_fragment_name(const std::string& name, const PathPolicy& paths, bool uri_reference);

}  // namespace ncafs::agg
