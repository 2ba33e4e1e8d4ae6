// The names a mount shows for the dataset files of a folder, and which file
// and view a name stands for. One set of rules for the mount's lookups and
// listings (fs/catalog.cpp, fs/listing.cpp) and for the commands that take a view name
// (export, inspect, check), so that whatever the mount lists they accept.
//   twin:    STEM.EXT (EXT a view format of fs/view_registry.hpp) of the first dataset file STEM.nc,
//            STEM.nca, STEM.ds, STEM.ncs, STEM.nc4, STEM.h5, STEM.hdf5, STEM.vds,
//            STEM.json (a reference set), then a refs=GLOB name of the stem;
//   classic: STEM.classic.nc of a netCDF-4 STEM.nc that is not an aggregation;
//   LOD:     STEM.lodN.EXT (1 <= N <= lods=) of the dataset a twin STEM.EXT shows.
// A real file of the name always wins; these rules serve names with none.
#pragma once

#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codecs/dataset.hpp"
#include "fs/view_registry.hpp"

namespace ncafs::fs {

// Suffixes of dataset files, in the order that decides which gives a twin.
// ".json": a kerchunk reference set (by content; other JSON files give no twins).
// ".zarr": a Zarr store's folder (FileClassifier::is_store_directory).
inline constexpr const char* kSourceSuffixes[] = {".nc",   ".nca", ".ds",   ".ncs",  ".nc4",
                                                  ".h5",   ".hdf5", ".vds", ".json", ".zarr"};

// The stem of a dataset file name (NAME of NAME.nc...) and the rank of its
// suffix in kSourceSuffixes, or nullopt.
std::optional<std::pair<std::string, int>> source_stem(const std::string& name);

// -o refs=GLOB: a name with no dataset suffix that one of the patterns
// matches (fnmatch) may be a reference set; its stem is the name without
// its last extension, its rank after every suffix's.
inline constexpr int kReferenceGlobRank = static_cast<int>(std::size(kSourceSuffixes));
std::optional<std::pair<std::string, int>> reference_glob_stem(const std::string& name,
                                                               const std::vector<std::string>& globs);

std::string twin_name(const std::string& stem, const std::string& view);

// Why the mount neither lists nor serves a name ("" when it may): longer
// than NAME_MAX (255 bytes; a view name made from a long file name), or
// holding a control character (bytes below 0x20 and 0x7f: they would garble
// listings, scripts and terminals; log lines show them escaped).
std::string unservable_name_reason(const std::string& name);
std::string lod_name(const std::string& stem, int level, const std::string& view);
std::string classic_name(const std::string& stem);

// Whether a dataset shows LOD names (with lods=): a variable of rank >= 2,
// and an aggregation or more than lod_min_size bytes of values.
bool shows_lod_views(const Dataset& dataset, bool aggregation, uint64_t lod_min_size);

// The file and view a name stands for.
struct ViewName {
    std::string source;  // the dataset file's name in the same folder
    std::string view;    // the view format's extension (fs/view_registry.hpp)
    int lod = 0;         // N of STEM.lodN.EXT (0: the full dataset)
    bool classic = false;  // STEM.classic.nc
};

// What the caller knows of the folder, asked in the order of the rules.
struct ViewNameProbe {
    std::function<bool(const std::string& view)> view_enabled;
    int lods = 0;  // lods=N: LOD names up to N
    // Whether the file of this name (in the folder) is a dataset that can give twins.
    std::function<bool(const std::string& name)> is_dataset;
    // Whether this NAME.nc is a netCDF-4 file, not an aggregation, whose classic view can be served.
    std::function<bool(const std::string& name)> gives_classic;
    // Names in the folder, of the stem, that match a refs=GLOB (asked after the suffixes); unset: none.
    std::function<std::vector<std::string>(const std::string& stem)> glob_sources;
};

// The file and view `name` (which no real file holds) stands for, or nullopt.
// For a twin or LOD name, the first dataset source of its stem (the caller
// decides whether its view can be served, and for LOD whether the dataset has LODs).
std::optional<ViewName> resolve_view_name(const std::string& name, const ViewNameProbe& probe);

}  // namespace ncafs::fs
