// The cheap test run before anything heavier asks whether a file is an
// aggregation: its name, its format (codecs/sniff.hpp), and whether any
// attribute name is one that the aggregation conventions use (for classic
// files every name in the header, read by codecs/cdf's header reader).
// The FUSE layer and `ncafs export` call it before is_aggregation_file.
#pragma once

#include <string>
#include <string_view>

#include "io/confined_open.hpp"

namespace ncafs::agg {

enum class Precheck {
    NotAggregation,  // certainly not: wrong name, not netCDF, no marker attribute, or an
                     // invalid classic header (never handed to netcdf-c)
    Maybe,           // needs the full test (is_aggregation_file)
};

// True for NAME.nc and NAME.nca: the only names under which an aggregation is recognised.
bool has_aggregation_name(const std::string& name);

// True for the attribute names that mark an aggregation variable in some
// generation of the conventions (nca_array, cfa_array, aggregated_data...).
bool is_marker_attribute(std::string_view name);

// Reads at most the file's header (classic) or its first MiB (HDF5).
// Opened O_NONBLOCK, regular files only (else NotAggregation), confined to
// `within` when given (by name otherwise: a command-line FILE only).
Precheck precheck_aggregation(const std::string& path, const ConfinedRoots* within = nullptr);
// The same test of a regular file already opened (any name: the caller
// checked it); `path` names it in messages only.
Precheck precheck_opened_file(int fd, const std::string& path);

}  // namespace ncafs::agg
