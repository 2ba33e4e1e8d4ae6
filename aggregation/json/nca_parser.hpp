// Parser for generations G1 (NCA 0.1-0.2.2, `nca_array`) and G2 (CFA 0.3/0.4,
// `cfa_array`): one scalar carrier variable + its JSON -> Aggregate. Metadata
// only: the aggregation file's header is all it looks at; no partition is
// opened. Every error names the file, "VAR:ATTR JSON.PATH" and the reason.
#pragma once

#include <optional>
#include <string>

#include "aggregation/model/limits.hpp"
#include "aggregation/model/aggregate.hpp"
#include "aggregation/read/path_policy.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg {

enum class NcaGeneration {
    Nca,  // G1: nca_array, nca_dimensions, cf_role nca_variable; `part` square = list, round = range
    Cfa,  // G2: cfa_array, cfa_dimensions, cf_role cfa_variable; `part` 0.4 rules unless 0.3 keys present
};

// The generation of a carrier variable, or nullopt for an ordinary variable.
// Detected by the JSON attribute (never by Conventions, A10 in docs/conventions/cf-drafts.md).
std::optional<NcaGeneration> nca_generation(const Variable& v);

// cf_role nca_private / cfa_private, or a non-zero integer nca_private / cfa_private (0.1).
bool is_nca_private(const Variable& v);

// Parses one carrier variable of `file` (the aggregation file's own dataset).
// Throws AggregationError.
Aggregate parse_nca_variable(const Dataset& file, const Variable& carrier, const PathPolicy& paths,
                             const AggregationLimits& limits = AggregationLimits{});

// `part` grammar (docs/conventions/nca-json.md, A2), exposed for tests. `square_is_range`: 0.4
// rules (square = [start, stop, step] inclusive, round = list); false: 0.2/0.3
// rules (square = list, round = (start, stop, step) inclusive). Throws
// std::runtime_error naming the character position.
std::vector<IndexSelection> parse_part(const std::string& text, bool square_is_range);

}  // namespace ncafs::agg
