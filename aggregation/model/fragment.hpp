// One partition of an aggregation as a value (docs/conventions/README.md
// "One model"): a half-open box of master index space mapped onto a variable
// of some file through a transform. The partition table
// (fragment_table.hpp) stores many of them compactly and builds these on
// demand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/types.hpp"

namespace ncafs::agg {

// One sub-array axis of a `part` selection: an arithmetic sequence
// first + i*step (i < count), or an explicit list of indices.
struct IndexSelection {
    bool is_list = false;
    int64_t first = 0;
    int64_t step = 1;
    uint64_t count = 0;
    std::vector<uint64_t> list;

    uint64_t size() const { return is_list ? list.size() : count; }
    uint64_t at(uint64_t i) const { return is_list ? list[i] : static_cast<uint64_t>(first + static_cast<int64_t>(i) * step); }
    uint64_t min_index() const;
    uint64_t max_index() const;
    bool is_contiguous_forward() const { return !is_list && step == 1; }
};

// y = scale * x + offset (units conversion; identity by default).
struct Affine {
    double scale = 1.0;
    double offset = 0.0;
    bool is_identity() const { return scale == 1.0 && offset == 0.0; }
};

enum class FragmentKind {
    File,      // a variable of another file
    Self,      // a (private) variable of the aggregation file itself
    Constant,  // every element the same value (later generations)
    Missing,   // explicitly missing: master fill
};

struct Fragment {
    // Box in master index space, half-open, one entry per master dimension.
    std::vector<uint64_t> start, count;

    FragmentKind kind = FragmentKind::File;
    std::string path;                 // resolved (lexically normal, absolute); Self: the aggregation file
    std::string variable;             // ncvar; empty when only varid is known
    std::string group;                // netCDF-4 group holding `variable` ("/a/b"); empty: the root group
    std::optional<int64_t> varid;     // used when variable is empty (position among the file's variables)
    std::vector<uint8_t> constant;    // Constant: one element of the master type, native order

    // Transform. Partition axes are the sub-array's own axes, in its order.
    std::vector<int> axis_to_master;            // master dim of each axis, -1 for an extra size-1 axis
    std::vector<uint64_t> declared_shape;       // sub-array shape from the metadata (empty: unknown)
    std::vector<std::optional<IndexSelection>> part;  // per axis; empty vector or nullopt: whole axis
    std::vector<bool> reverse;                  // per master dim: partition runs the other way
    Affine units;                               // partition units -> master units
    std::string units_text;                     // for messages ("K @ 273.15 -> K")
    std::optional<NcType> declared_type;        // dtype from the metadata (the file's own type wins)

    std::string where;  // "tas:nca_array Partitions[3]" for messages

    uint64_t element_count() const;
    bool transform_is_identity() const;  // no reversal, permutation, extra axis or part offset/stride
};

}  // namespace ncafs::agg
