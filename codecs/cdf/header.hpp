// The parsed header of a CDF-1, CDF-2 or CDF-5 file (netCDF classic,
// 64-bit offset, 64-bit data), shared by the header reader and writer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/types.hpp"

namespace ncafs::cdf {

// The VERSION byte of the magic 'C' 'D' 'F' VERSION.
inline constexpr int kClassic = 1;         // CDF-1
inline constexpr int kOffset64 = 2;        // CDF-2
inline constexpr int kData64 = 5;          // CDF-5
inline bool is_cdf_version(int v) { return v == kClassic || v == kOffset64 || v == kData64; }

// The vsize stored for a variable too large for the 32-bit field (spec, "Note on vsize"; docs/formats/cdf.md).
inline constexpr uint64_t kSaturatedVsize = 0xFFFFFFFFu;

struct CdfVariable {
    std::string name;
    std::vector<size_t> dimids;
    std::vector<Attribute> attributes;
    NcType type = NcType::Byte;
    uint64_t vsize = 0;          // as stored; readers ignore it (it may be saturated)
    uint64_t begin = 0;          // file offset of the first element
    uint64_t entry_offset = 0;   // where the variable's entry starts in the header (for messages)
};

struct CdfHeader {
    int version = kClassic;
    uint64_t numrecs = 0;   // resolved: for STREAMING computed from the file size
    bool streaming = false; // the numrecs field held STREAMING
    // The record dimension has unlimited = true and length = numrecs.
    std::vector<Dimension> dimensions;
    std::vector<Attribute> attributes;  // global
    std::vector<CdfVariable> variables;
    uint64_t header_size = 0;  // bytes of the encoded header (end of var_list)

    std::optional<size_t> record_dimension() const {
        for (size_t i = 0; i < dimensions.size(); ++i)
            if (dimensions[i].unlimited) return i;
        return std::nullopt;
    }
    bool is_record_variable(const CdfVariable& v) const {
        auto r = record_dimension();
        return r && !v.dimids.empty() && v.dimids[0] == *r;
    }
};

}  // namespace ncafs::cdf
