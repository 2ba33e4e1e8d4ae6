// Every kind of view, in one table: a view format (its extension, which
// datasets it can hold, its writer) and every kind of name a mount shows for
// it (the twin NAME.EXT, the classic NAME.classic.nc, the LOD NAME.lodN.EXT).
// The catalog, the cache keys, the backend, option parsing (views=), --help
// and every command (export --format, inspect, check) read this table: a new
// view is one row of kViewFormats (view_registry.cpp) and its writer.
// How a name is resolved to its dataset file is fs/view_names.hpp.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codecs/cdf/cdf_view.hpp"
#include "codecs/dataset.hpp"
#include "codecs/ds/ds_view.hpp"
#include "codecs/vds/vds_view.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs::fs {

// The view formats, in the order a listing gives a dataset's twins.
enum class ViewKind { Nc, Ds, Ncs, Vds, Zarr };

// The writers' settings, made once per mount or export from the -o options (fs/backend.cpp).
struct ViewWriters {
    CdfViewOptions cdf;
    DsViewOptions ds;
    VdsViewOptions vds;
};

struct ViewFormat {
    ViewKind kind;
    const char* extension;  // NAME.EXT, views=EXT, export --format EXT
    const char* title;      // what the file is, for --help and the docs
    const char* holds;      // which datasets have the view ("" every one)
    bool records_name;      // the bytes record the view's own file name (ncstream): the name is part of its key
    bool folder;            // a folder of files (zarr: aggregation/zarr_view/), not one file: built by the catalog
    // From metadata alone, for a view whose build is costly: "" when it can be
    // built, else why not; nullopt when there is no such verdict (build it).
    std::optional<std::string> (*verdict)(const Dataset& dataset, const ViewWriters& writers);
    // The view of `dataset` under the file name `name`; throws when the view cannot hold the dataset.
    std::shared_ptr<const VirtualFile> (*build)(std::shared_ptr<const Dataset> dataset, const ViewWriters& writers,
                                                const std::string& name);
};

// Every format, in ViewKind order.
std::span<const ViewFormat> view_formats();
const ViewFormat& view_format(ViewKind kind);
// The format of an extension ("nc"), or nullptr.
const ViewFormat* find_view_format(std::string_view extension);
// The format of an extension; throws UsageError naming the known ones.
const ViewFormat& view_format_named(std::string_view extension, const std::string& what);
// Every extension, in order: the default of views=.
std::vector<std::string> view_extensions();
// "nc, ds, ncs, vds" with `separator` between.
std::string view_extension_list(const std::string& separator);

// The classic view of a netCDF-4 NAME.nc: NAME.classic.nc.
inline constexpr const char* kClassicSuffix = ".classic.nc";

// One kind of name a mount shows beside a dataset file, for --help, the man
// page and the docs ("NAME.classic.nc", "the netCDF classic view of ...").
struct ViewNamePattern {
    std::string pattern;
    std::string meaning;
};
// Every kind of view name: each format's twin, the classic view, each format's LOD views.
std::vector<ViewNamePattern> view_name_patterns();
// The "views" paragraph of --help: every pattern of view_name_patterns() with its meaning.
std::string views_help_text();

}  // namespace ncafs::fs
