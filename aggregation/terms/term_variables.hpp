// Reading the term / feature variables of CF-style aggregations (G3 CFA-0.6.x,
// G4 drafts, G5 CF-1.13): `map`/`location` sizes, `uris`/`file` names,
// `identifiers`/`address`, `unique_values`. They may be netCDF-4 `string`
// variables or netCDF-3 `char` arrays whose last dimension is the string
// length, and they may live in groups (CF group search), which the Dataset
// model does not show (it skips string variables and groups) - so they are
// read apart, by a helper process where they run, else by netcdf-c here
// (codecs/netcdf/netcdf_terms.hpp).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codecs/netcdf/netcdf_terms.hpp"
#include "codecs/netcdf/term_values.hpp"
#include "io/confined_open.hpp"

namespace ncafs::agg {

using netcdf::TermArray;

// An open aggregation file for term reading. Used only while parsing.
class TermFile {
public:
    // Throws SourceError naming the path. `within`: open confined to those
    // roots. `wanted`: names (as `find` takes them) of the variables about
    // to be read, in the order they will be: where helpers run, the first
    // rows of those the file holds come with its inventory, in one helper.
    explicit TermFile(const std::string& path, const ConfinedRoots* within = nullptr,
                      const std::vector<std::string>& wanted = {});

    // CF group search from the root group: "/g/v" absolute, "g/v" relative to
    // the root, "v" in the root group. nullopt when no such variable exists.
    std::optional<std::string> find(const std::string& name) const;

    // Reads the variable at a path `find` returned. Masks elements equal to
    // _FillValue / missing_value (and the netCDF default fill of numeric
    // types, as netCDF4-python does when no _FillValue is set; empty strings
    // for text). Throws SourceError.
    TermArray read(const std::string& full_path) const { return reader_->read(full_path); }

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
    std::unique_ptr<netcdf::TermReader> reader_;
    std::set<std::string> paths_;  // every variable's full path
};

}  // namespace ncafs::agg
