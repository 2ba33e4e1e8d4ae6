#include "fs/view_registry.hpp"

#include <iterator>
#include <sstream>

#include "codecs/error.hpp"
#include "codecs/ncstream/ncstream_view.hpp"
#include "fs/view_names.hpp"

namespace ncafs::fs {

namespace {

std::shared_ptr<const VirtualFile> build_nc(std::shared_ptr<const Dataset> d, const ViewWriters& w, const std::string&) {
    return make_cdf_view(std::move(d), w.cdf);
}

std::shared_ptr<const VirtualFile> build_ds(std::shared_ptr<const Dataset> d, const ViewWriters& w, const std::string&) {
    return make_ds_view(std::move(d), w.ds);
}

std::shared_ptr<const VirtualFile> build_ncs(std::shared_ptr<const Dataset> d, const ViewWriters&,
                                             const std::string& name) {
    return make_ncstream_view(std::move(d), name);
}

std::shared_ptr<const VirtualFile> build_vds(std::shared_ptr<const Dataset> d, const ViewWriters& w,
                                             const std::string&) {
    return make_vds_view(std::move(d), w.vds);
}

// A folder view has no single file: the catalog serves its members (FolderViews::open_member, fs/folder_views.hpp).
std::shared_ptr<const VirtualFile> build_folder(std::shared_ptr<const Dataset> d, const ViewWriters&,
                                                const std::string&) {
    throw UsageError(d->origin + ": the .zarr view is a folder of files, served by a mount (export --format "
                                 "kerchunk writes the same store as references)");
}

// The .vds view plans up to 2^20 chunks: judged from metadata at a listing.
std::optional<std::string> vds_verdict(const Dataset& d, const ViewWriters& w) {
    return vds_view_refusal(d, w.vds.lods).value_or("");
}

// The header-only views: built to know (a header is cheap).
std::optional<std::string> no_verdict(const Dataset&, const ViewWriters&) { return std::nullopt; }

// In ViewKind order.
constexpr ViewFormat kViewFormats[] = {
    {ViewKind::Nc, "nc", "netCDF classic (CDF-1, 2 or 5: cdf_version=)", "", false, false, no_verdict, build_nc},
    {ViewKind::Ds, "ds", "ds-1.0 (values as ds_values=)", "", false, false, no_verdict, build_ds},
    {ViewKind::Ncs, "ncs", "ncstream (the header records the file's name)", "", true, false, no_verdict, build_ncs},
    {ViewKind::Vds, "vds", "OpenVDS container (vds_lods= stored LODs)",
     "datasets with a variable of rank 1 to 6 of a type VDS holds, in at most 2^20 chunks", false, false, vds_verdict,
     build_vds},
    {ViewKind::Zarr, "zarr", "Zarr v2 store, a folder (.zgroup, .zmetadata, VAR/.zarray, VAR/0.0)", "", true, true,
     no_verdict, build_folder},
};

constexpr bool in_kind_order() {
    for (size_t i = 0; i < std::size(kViewFormats); ++i)
        if (static_cast<size_t>(kViewFormats[i].kind) != i) return false;
    return true;
}
static_assert(in_kind_order(), "kViewFormats is indexed by ViewKind");

// Words of `text` wrapped at 79 columns, every line but the first indented by `indent`.
std::string wrapped(const std::string& text, size_t first_column, size_t indent) {
    std::istringstream words(text);
    std::string out, word;
    size_t column = first_column;
    while (words >> word) {
        if (column > indent && column + 1 + word.size() > 79) {
            out += "\n" + std::string(indent, ' ');
            column = indent;
        } else if (column > indent) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
    }
    return out;
}

}  // namespace

std::span<const ViewFormat> view_formats() { return kViewFormats; }

const ViewFormat& view_format(ViewKind kind) { return kViewFormats[static_cast<size_t>(kind)]; }

const ViewFormat* find_view_format(std::string_view extension) {
    for (const auto& f : kViewFormats)
        if (extension == f.extension) return &f;
    return nullptr;
}

const ViewFormat& view_format_named(std::string_view extension, const std::string& what) {
    if (const ViewFormat* f = find_view_format(extension)) return *f;
    throw UsageError(what + ": unknown view '" + std::string(extension) + "' (known: " + view_extension_list(", ") +
                     ")");
}

std::vector<std::string> view_extensions() {
    std::vector<std::string> out;
    for (const auto& f : kViewFormats) out.emplace_back(f.extension);
    return out;
}

std::string view_extension_list(const std::string& separator) {
    std::string out;
    for (const auto& f : kViewFormats) out += (out.empty() ? "" : separator) + f.extension;
    return out;
}

std::vector<ViewNamePattern> view_name_patterns() {
    std::vector<ViewNamePattern> out;
    auto which = [](const ViewFormat& f) { return *f.holds ? std::string("; only ") + f.holds : std::string(); };
    for (const auto& f : kViewFormats)
        out.push_back({std::string("NAME.") + f.extension, std::string(f.title) + which(f)});
    out.push_back({std::string("NAME") + kClassicSuffix,
                   "netCDF classic view of a netCDF-4 NAME.nc that is not an aggregation (a NAME.nc4, NAME.h5 or "
                   "NAME.hdf5 shows it as NAME.nc)"});
    const std::string first_lod = std::string("NAME.lodN.") + kViewFormats[0].extension;
    for (const auto& f : kViewFormats) {
        const std::string lod = std::string("NAME.lodN.") + f.extension;
        out.push_back({lod, std::string("(lods=N) the ") + f.extension + " view of every 2^N-th sample" +
                                (lod == first_lod ? "; aggregations and datasets over lod_min_size, with a variable "
                                                    "of rank 2 or more"
                                                  : ", as " + first_lod)});
    }
    return out;
}

std::string views_help_text() {
    constexpr size_t kMeaningColumn = 21;  // as the option tables of --help
    std::string sources;
    for (const char* suffix : kSourceSuffixes) sources += (sources.empty() ? "" : ", ") + std::string("NAME") + suffix;
    std::string out = wrapped("views: every dataset file (" + sources +
                                  ", told by its magic number) and every folder NAME.vds holding an OpenVDS volume "
                                  "also appears under these names, files computed on demand (a real file of the "
                                  "name always wins):",
                              0, 0) +
                      "\n";
    for (const auto& p : view_name_patterns()) {
        std::string line = "  " + p.pattern;
        line += line.size() + 2 <= kMeaningColumn ? std::string(kMeaningColumn - line.size(), ' ') : "  ";
        out += line + wrapped(p.meaning, line.size(), kMeaningColumn) + "\n";
    }
    return out;
}

}  // namespace ncafs::fs
