// Term variables of CF-style aggregation files (G3 CFA-0.6.x, G4 drafts, G5
// CF-1.13) as values only (no netcdf-c id): what netcdf-c says of every
// variable of the file (TermInventory: paths, dimensions, text attributes; also the string and
// grouped variables the Dataset model leaves out) and the values of one
// (TermArray). Read by netcdf-c in a helper process where they run
// (netcdf_terms.hpp), sent to the daemon (survey_wire.hpp) and checked there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codecs/types.hpp"

namespace ncafs::netcdf {

using TextAttributes = std::vector<std::pair<std::string, std::string>>;

// One variable of the file, of any type, in any group.
struct TermVariable {
    std::string path;               // "/name" in the root group, "/g/name" in a group
    std::vector<std::string> dims;  // dimension names as stored (a char variable's string length included)
    TextAttributes text_attributes;  // char and single-string attributes (longer than 64 KiB: left out)
};

// Every variable of the file (groups walked depth first).
struct TermInventory {
    std::vector<TermVariable> variables;
};

// One term variable's values, flattened in C order, missing elements masked.
// Stored column-wise (one buffer per kind, no object per element): a term
// variable of a million fragments costs a few bytes an element to hold.
struct TermArray {
    std::string path;                      // full path, "/aggregation/location" or "/fragment_map"
    std::vector<std::string> dims;         // dimension names (string-length dim of char storage removed)
    std::vector<uint64_t> shape;           // matching dims
    bool is_text = false;                  // string or char storage
    std::optional<NcType> numeric_type;    // the netCDF type of numeric storage
    // is_text: element i is text_bytes[text_end[i-1], text_end[i]).
    std::string text_bytes;
    std::vector<uint64_t> text_end;
    // Numeric storage: one element of numeric_type each, native order;
    // integer types also as exact integers.
    std::vector<uint8_t> bytes;
    std::vector<int64_t> ints;
    std::vector<bool> masked;              // per element (text or numeric): missing
    TextAttributes text_attributes;        // char/string attributes

    uint64_t size() const;                 // product of shape
    uint64_t elements() const { return masked.size(); }  // elements read
    std::optional<std::string_view> text_at(uint64_t i) const;  // nullopt: missing
    std::optional<int64_t> integer_at(uint64_t i) const;        // nullopt: missing or not an integer type
    const uint8_t* raw_at(uint64_t i) const;                    // nullptr: missing
    std::optional<std::string> text_attribute(const std::string& name) const;
};

// A term variable describes fragments, one element each: far fewer than this.
inline constexpr uint64_t kMaxTermElements = uint64_t{1} << 28;
// One answer of rows of a term variable holds about this many bytes at most
// (at least one row): a term of millions of long names comes in several.
inline constexpr uint64_t kTermRowsBytes = uint64_t{16} << 20;

// The bytes the daemon holds for `a`'s elements (text, ends, masks, values).
uint64_t term_bytes(const TermArray& a);

}  // namespace ncafs::netcdf
