// The one internal model every aggregation generation is parsed into
// (docs/conventions/README.md "One model"): a master array over named
// dimensions plus fragments, each a half-open box of master index space
// mapped onto a variable of some file through a transform. Parsers (NCA/CFA
// JSON in aggregation/json/, CFA-0.6, the CF drafts and CF-1.13 in
// aggregation/terms/) produce it; the aggregated source and
// the commands consume it. Nothing here opens a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/types.hpp"
#include "aggregation/model/fragment.hpp"
#include "aggregation/model/fragment_table.hpp"

namespace ncafs::agg {

struct Aggregate {
    std::string file;   // the aggregation file (origin of every message)
    std::string name;   // presented variable name
    NcType type = NcType::Double;
    std::vector<std::string> dims;    // master dimension names, outermost first
    std::vector<uint64_t> shape;
    std::vector<Attribute> attributes;  // presented attributes (machinery removed)
    std::vector<uint8_t> fill;          // one element of `type`, native order: the master's fill value
    std::optional<Affine> packing;      // master scale_factor/add_offset (raw -> physical), if any
    std::string units, calendar;

    // The partition matrix as declared (informational; location places partitions).
    std::vector<std::string> matrix_dims;
    std::vector<uint64_t> matrix_shape;

    FragmentTable fragments;  // compact; fragments[i] builds one Fragment
    std::vector<std::string> warnings;  // metadata oddities that did not stop parsing

    uint64_t element_count() const;
    uint64_t covered_elements() const;  // sum of fragment boxes (they do not overlap)
};

}  // namespace ncafs::agg
