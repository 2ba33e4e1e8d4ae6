// The cheap test run before anything heavier asks whether a file is an
// aggregation: its name, its magic number, and (for classic files) whether any
// attribute name in its header is one that aggregation conventions use.
#pragma once

#include <string>

#include "codecs/confined_open.hpp"

namespace ncafs::fs {

enum class Precheck {
    NotAggregation,  // certainly not: wrong name, not netCDF, no marker attribute, or a
                     // classic header that cannot be walked (never handed to netcdf-c)
    Maybe,           // needs the full test (is_aggregation_file)
};

// True for NAME.nc and NAME.nca: the only names under which an aggregation is recognised.
bool has_aggregation_name(const std::string& name);

// Reads at most the file's header (classic) or its first MiB (HDF5).
// Opened O_NONBLOCK, regular files only (else NotAggregation), confined to
// `within` when given.
Precheck precheck_aggregation(const std::string& path, const ConfinedRoots* within = nullptr);

}  // namespace ncafs::fs
