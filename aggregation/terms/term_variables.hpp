// Reading the term / feature variables of CF-style aggregations (G3 CFA-0.6.x,
// G4 drafts, G5 CF-1.13): `map`/`location` sizes, `uris`/`file` names,
// `identifiers`/`address`, `unique_values`. They may be netCDF-4 `string`
// variables or netCDF-3 `char` arrays whose last dimension is the string
// length, and they may live in groups (CF group search), which the Dataset
// model does not show (it skips string variables and groups) - so they are
// read here directly with netcdf-c, under ncafs::netcdf_library_mutex().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/confined_open.hpp"
#include "codecs/netcdf/hdf5_indirection.hpp"
#include "codecs/types.hpp"

namespace ncafs::agg {

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
    std::vector<std::pair<std::string, std::string>> text_attributes;  // char/string attributes

    uint64_t size() const;                 // product of shape
    uint64_t elements() const { return masked.size(); }  // elements read
    std::optional<std::string_view> text_at(uint64_t i) const;  // nullopt: missing
    std::optional<int64_t> integer_at(uint64_t i) const;        // nullopt: missing or not an integer type
    const uint8_t* raw_at(uint64_t i) const;                    // nullptr: missing
    std::optional<std::string> text_attribute(const std::string& name) const;
};

// An open aggregation file for term reading (netcdf-c handle, closed on
// destruction). Not thread-safe by itself; every netcdf-c call holds the
// library mutex. Used only while parsing.
class TermFile {
public:
    // Throws SourceError naming the path. `within`: open confined to those
    // roots (then netcdf-c reads that fd's /proc/self/fd name, not the path).
    explicit TermFile(const std::string& path, const ConfinedRoots* within = nullptr);
    ~TermFile();
    TermFile(const TermFile&) = delete;
    TermFile& operator=(const TermFile&) = delete;

    // CF group search from the root group: "/g/v" absolute, "g/v" relative to
    // the root, "v" in the root group. nullopt when no such variable exists.
    std::optional<std::string> find(const std::string& name) const;

    // Reads the variable at a path `find` returned. Masks elements equal to
    // _FillValue / missing_value (and the netCDF default fill of numeric
    // types, as netCDF4-python does when no _FillValue is set; empty strings
    // for text). Throws SourceError.
    TermArray read(const std::string& full_path) const;

    // Dimension lengths of the variable at a path `find` returned.
    std::vector<uint64_t> shape_of(const std::string& full_path) const;

    // Root-group variables with their dimension names (every type, also
    // string/vlen ones that the Dataset model skips) - for hiding.
    struct VariableDims {
        std::string name;
        std::vector<std::string> dims;
        std::optional<std::string> aggregated_data;  // the attribute, when present (any variable type)
        std::optional<std::string> aggregated_dimensions;
    };
    std::vector<VariableDims> root_variables() const;

    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::vector<char> image_;  // the file's bytes when opened in memory (see the constructor)
    int ncid_ = -1;
    // Term variables with HDF5 external storage or a virtual layout are never read.
    std::optional<netcdf::Hdf5Indirections> indirections_;
};

}  // namespace ncafs::agg
