// Public entry points for the FUSE layer: is this file an aggregation file,
// and the dataset it presents (master arrays as ordinary variables).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aggregation/model/limits.hpp"
#include "aggregation/read/path_policy.hpp"
#include "io/confined_open.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg {
class DatasetCache;
}

namespace ncafs {

struct AggregationOptions {
    // Partition files must lie under one of these (after symlinks); empty:
    // the folder the aggregation file was found in, and below.
    std::vector<std::string> allowed_roots;
    // Why the roots are these, for the message refusing a path outside them
    // (agg::PathPolicy); empty: a general sentence.
    std::string roots_rule;
    // Path prefix rewrites old -> new, applied to resolved partition paths
    // (e.g. {"/home/david", "/data/david"}); first match wins.
    std::vector<std::pair<std::string, std::string>> path_rewrites;
    agg::AggregationLimits limits;  // max_fragments, max_metadata (docs/security.md "Hostile input")
    agg::MissingPartitions missing_partitions;  // missing_partitions=error|fill
    // allow_other: a Zarr store's chunk files are served only when as readable
    // as their array's metadata file (docs/zarr.md "Confinement").
    bool serves_other_users = false;
};

// Content-based and cheap: reads the header only (via netcdf-c, under its
// mutex) and looks for a variable carrying nca_array or cfa_array, or
// aggregated_dimensions + aggregated_data (G3-G5). Returns
// false fast for files that are neither CDF nor HDF5, and on any error
// (FIFOs, devices: refused without blocking), except that a CDF file whose
// header ncafs's own reader rejects throws FormatError (it is never handed
// to netcdf-c). `within`: open confined.
bool is_aggregation_file(const std::string& path, const ConfinedRoots* within = nullptr);

// The dataset an aggregation file presents: NCA/CFA variables become ordinary
// variables over their master dimensions (attributes minus cf_role and the
// nca_*/cfa_* machinery), backed by AggregatedSource; private variables and
// the dimensions only they use are hidden; other variables are read from the
// aggregation file itself; Conventions loses its NCA/CFA token. Reads the
// aggregation file's metadata only: no partition is opened. `cache`: where
// its partitions are kept open, the caller's (the daemon's is fs::Backend's).
// Throws agg::AggregationError (bad metadata) or SourceError.
std::shared_ptr<const Dataset> open_aggregation(const std::string& path, const AggregationOptions& options,
                                                agg::DatasetCache& cache);

}  // namespace ncafs

namespace ncafs::agg {

class AggregatedSource;
class DatasetCache;

// What open_aggregation builds, with the parts the commands need.
struct LoadedAggregation {
    std::shared_ptr<const Dataset> dataset;
    std::vector<std::shared_ptr<const AggregatedSource>> sources;  // one per master array
    std::vector<std::shared_ptr<const AggregatedSource>> cf_sources;  // one per CF-style (G3-G5) aggregation variable
    std::vector<std::string> warnings;
    size_t hidden_variables = 0;
    size_t hidden_dimensions = 0;
};

// A kerchunk reference set (JSON, by content) loads as its dataset alone
// (aggregation/reference_set/reference_dataset.hpp).
LoadedAggregation load_aggregation(const std::string& path, const AggregationOptions& options, DatasetCache& cache);

// "CF-1.5 NCA" -> "CF-1.5"; "CF-1.7 CFA-0.4" -> "CF-1.7".
std::string conventions_without_aggregation(const std::string& conventions);

// Global attribute of an aggregation file written by `ncafs aggregate`: the
// fragments' own Conventions (the file itself must say CF-1.13). The
// presented dataset shows it as its Conventions and hides the attribute.
inline constexpr const char* kFragmentConventions = "ncafs_fragment_Conventions";

}  // namespace ncafs::agg
