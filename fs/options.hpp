// The command line of `ncafs` (mount) and the -o options shared by mount and
// `ncafs export`: parsing, validation and the --help text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aggregation/model/limits.hpp"
#include "io/metadata_budget.hpp"
#include "fs/view_registry.hpp"
#include "aggregation/read/remote_objects.hpp"

namespace ncafs::fs {

// Options that shape what the views contain; shared by mount and export.
struct ViewOptions {
    std::optional<int> cdf_version;             // 1, 2 or 5; nullopt: smallest that fits
    std::vector<std::string> views = view_extensions();  // view formats (fs/view_registry.hpp) in the order given
    bool ds_values_cf = false;                  // ds_values=cf: .ds views hold netCDF4-python's values
    int vds_lods = 2;                           // vds_lods=N: stored LODs of the .vds views
    int zarr_format = 2;                        // zarr_format=2|3: the .zarr views' Zarr version
    bool zarr_chunks_stored = false;            // zarr_chunks=stored|computed: netCDF-4 chunks passed through
    std::vector<std::string> extra_allowed_roots;  // allow_root=DIR (absolute, repeatable)
    std::vector<std::pair<std::string, std::string>> path_rewrites;  // rewrite=OLD=NEW
    bool has_view(const std::string& name) const;
    size_t open_files = 128;                    // bound of the cache of opened datasets
    uint64_t cache_mem = uint64_t{256} << 20;   // cache_mem=SIZE: bound of the decoded chunks kept
    double cache_timeout = 60.0;                // entry/attr timeout of unchanged files (seconds)
    bool splice = true;                         // pass file extents to the kernel by splice
    agg::AggregationLimits limits;              // max_fragments=, max_metadata=
    MetadataLimits metadata_mem;                // max_metadata_mem=, max_file_metadata_mem= (io/metadata_budget.hpp)
    agg::RemoteConfig remote;                // remote=, s3_*=, ca_file=, cache_dir=, cache_size= (remote_options.hpp)
    bool sandbox = true;                        // sandbox=on|off: Landlock (fs/sandbox_policy.hpp)
    bool fill_missing_partitions = false;       // missing_partitions=error|fill
    int lods = 0;                               // lods=N: NAME.lod1.nc ... NAME.lodN.nc views
    std::vector<std::string> lod_keep;          // lod_keep=DIM:DIM: dimensions LOD views leave whole
    uint64_t lod_min_size = uint64_t{64} << 20;  // lod_min_size=SIZE: LOD views of datasets holding more (aggregations always)
    std::vector<std::string> reference_globs;   // refs=GLOB: names besides *.json that may be reference sets
    // allow_other: sizes and listings read no file but the entry's own
    // (docs/security.md "What a caller can learn"), so views that would need
    // other files' values for their size do without them.
    bool serves_other_users = false;
};

struct MountOptions {
    std::string source;      // absolute, symlinks resolved
    std::string mountpoint;  // absolute
    bool foreground = false;
    bool debug = false;
    bool single_thread = false;
    bool allow_other = false;
    ViewOptions view;
    // Generic FUSE / mount options handed to libfuse (each one "name" or "name=value").
    std::vector<std::string> fuse_options;
    bool show_help = false;
    bool show_version = false;
};

// Whether `name` is the extension of a view format (fs/view_registry.hpp).
bool is_known_view_name(const std::string& name);

// The value of missing_partitions=: true for fill, false for error; throws
// UsageError for anything else. (mount, export and check alike)
bool parse_missing_partitions(const std::string& value);

// Splits one -o argument into items. Commas separate items, except that bare
// view names directly after views=... extend that list (views=nc,ds,ncs);
// views=nc:ds is the same list.
std::vector<std::string> split_option_list(const std::string& list);

// Applies one ncafs-specific option item; returns false when the item is not
// an ncafs option (then it is a generic FUSE/mount option). Throws UsageError
// for a bad value.
bool apply_view_option(const std::string& item, ViewOptions& options);

// Parses `ncafs SOURCE MOUNTPOINT [-f] [-d] [-s] [-o opts]...` (argv without
// the program name). Throws UsageError with a message for the user.
MountOptions parse_mount_command_line(const std::vector<std::string>& args);

std::string usage_text(const std::string& program);
std::string version_text();

}  // namespace ncafs::fs
