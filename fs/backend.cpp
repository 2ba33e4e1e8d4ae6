#include "fs/backend.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <unordered_map>

#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/dataset_files.hpp"
#include "aggregation/reference_set/reference_dataset.hpp"
#include "aggregation/reference_set/reference_source.hpp"
#include "aggregation/zarr_store/zarr_store_dataset.hpp"
#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/decoded_chunk_cache.hpp"
#include "codecs/open_dataset.hpp"
#include "codecs/sniff.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "fs/log.hpp"
#include "fs/view_registry.hpp"
#include "io/system_call_error.hpp"

namespace ncafs::fs {

SourceFormat source_format_of(FileFormat format) {
    switch (format) {
        case FileFormat::Cdf:
        case FileFormat::Hdf5:
            return SourceFormat::Netcdf;
        case FileFormat::Vds:
            return SourceFormat::Vds;
        case FileFormat::Ds:
            return SourceFormat::Ds;
        case FileFormat::Ncstream:
            return SourceFormat::Ncstream;
        case FileFormat::None:
            break;
    }
    return SourceFormat::None;
}

SourceFormat sniff_source_format(const std::string& path, const ConfinedRoots* within) {
    // O_NONBLOCK, regular only: a FIFO that replaced a file between stat and open must not hang us.
    OpenResult opened = open_regular_file(path, within);
    if (!opened.fd) return SourceFormat::None;
    const SourceFormat format = source_format_of(sniff_fd(opened.fd.get()));
    if ((format == SourceFormat::Ds || format == SourceFormat::None) && is_reference_set_fd(opened.fd.get()))
        return SourceFormat::ReferenceSet;
    return format;
}

agg::DatasetCache& shared_dataset_cache() { return agg::DatasetCache::shared(); }

namespace {

// The view with what building it was counted at, held while it lives.
std::shared_ptr<const VirtualFile> holding(std::shared_ptr<const VirtualFile> view,
                                           std::shared_ptr<const MetadataCharge> charge) {
    struct Held {
        std::shared_ptr<const VirtualFile> view;
        std::shared_ptr<const MetadataCharge> charge;
    };
    auto held = std::make_shared<const Held>(Held{std::move(view), std::move(charge)});
    return std::shared_ptr<const VirtualFile>(held, held->view.get());
}

// A dataset read by `open` with what it was counted at (io/metadata_budget.hpp) held while it lives.
template <typename Open>
std::shared_ptr<const Dataset> counted(const std::string& path, Open open) {
    MetadataScope scope(path);
    Dataset dataset = open();
    dataset.charge = scope.take();
    return std::make_shared<const Dataset>(std::move(dataset));
}

// The reader of a dataset file's magic (ncafs::open_dataset, the one
// dispatcher), reading the opened file only; a file of no known magic is
// refused here rather than handed to netcdf-c.
std::shared_ptr<const Dataset> open_single_file_dataset(std::shared_ptr<const OpenFile> file) {
    if (sniff_file(*file) == FileFormat::None)
        throw SourceError(file->path(), "not a netCDF, OpenVDS, ds or ncstream file (no known magic number)");
    return std::make_shared<const Dataset>(ncafs::open_dataset(std::move(file)));
}

// An OpenVDS volume in the directory form, opened confined; its members are
// then opened from that fd without following symlinks (codecs/vds).
std::shared_ptr<const Dataset> open_vds_directory_dataset(const std::string& path, const ConfinedRoots& confined) {
    OpenResult dir = confined.open(path, O_RDONLY | O_DIRECTORY);
    if (!dir.fd)
        throw SystemCallError(path, "cannot open the VDS directory: " +
                                        (dir.reason.empty() ? std::string(std::strerror(dir.error)) : dir.reason),
                              dir.error);
    return counted(path, [&] { return vds::open_vds_directory(std::move(dir.fd), path); });
}

// A variable that refuses every read (HDF5 external storage...) is left out
// of the views: every read block of a view touching its bytes would fail,
// in a small file the whole file. Each refusal is logged once (a warning:
// data an operator may expect is not served); what no view format can hold
// (string variables, groups) is a fact about the file, said once per file
// at debug level (`ncafs inspect FILE` lists it too).
std::shared_ptr<const Dataset> presentable(std::shared_ptr<const Dataset> dataset) {
    auto refuses = [](const Variable& v) { return v.source && v.source->refusal(); };
    if (std::any_of(dataset->variables.begin(), dataset->variables.end(), refuses)) {
        auto copy = std::make_shared<Dataset>(*dataset);
        std::erase_if(copy->variables, refuses);
        for (auto& note : copy->notes) note.listed = false;
        dataset = std::move(copy);
    }
    std::string left_out;
    for (const auto& note : dataset->notes) {
        if (note.refused && !note.listed) log_once(LogLevel::Warning, dataset->origin + ": " + note.text);
        if (!note.refused) left_out += (left_out.empty() ? "" : "; ") + note.text;
    }
    if (!left_out.empty()) log_once(LogLevel::Debug, dataset->origin + ": left out: " + left_out);
    return dataset;
}

bool draws_on_other_files(const Dataset& dataset) {
    return std::any_of(dataset.variables.begin(), dataset.variables.end(),
                       [](const Variable& v) { return v.source && v.source->draws_on_other_files(); });
}

// Partition folders held open during one sweep: partitions come in folder
// order, so a few suffice, and descriptors stay within the bound
// open_files= promises (a collection may span thousands of folders).
constexpr size_t kSweepFolders = 4;

std::optional<std::string> first_unreadable(std::span<const std::string> files, const ConfinedRoots& confined) {
    std::unordered_map<std::string, UniqueFd> folders;
    for (const auto& file : files) {
        const auto slash = file.rfind('/');
        if (slash == std::string::npos || slash + 1 == file.size()) return file;
        const std::string folder = slash == 0 ? std::string("/") : file.substr(0, slash);
        auto it = folders.find(folder);
        if (it == folders.end()) {
            if (folders.size() >= kSweepFolders) folders.clear();
            OpenResult dir = confined.open(folder, O_PATH | O_DIRECTORY);
            if (!dir.fd) return file;
            it = folders.emplace(folder, std::move(dir.fd)).first;
        }
        if (::faccessat(it->second.get(), file.c_str() + slash + 1, R_OK, AT_SYMLINK_NOFOLLOW) != 0) return file;
    }
    return std::nullopt;
}

}  // namespace

Backend make_backend(const ViewOptions& options, const std::vector<std::string>& allowed_roots,
                     const std::string& roots_rule) {
    AggregationOptions aggregation;
    aggregation.allowed_roots = allowed_roots;
    aggregation.roots_rule = roots_rule;
    for (const auto& r : options.extra_allowed_roots) aggregation.allowed_roots.push_back(r);
    aggregation.path_rewrites = options.path_rewrites;
    aggregation.limits = options.limits;
    aggregation.missing_partitions.fill = options.fill_missing_partitions;
    aggregation.serves_other_users = options.serves_other_users;
    // One line per partition for the life of the process, however many reads.
    aggregation.missing_partitions.note = [](const std::string& m) { log_once(LogLevel::Warning, m); };
    ViewWriters writers;
    writers.cdf.version = options.cdf_version;
    writers.ds.values = options.ds_values_cf ? DsViewOptions::Values::Cf : DsViewOptions::Values::Raw;
    writers.vds.lods = options.vds_lods;
    // Variables a .vds view leaves out are a fact about each dataset, not
    // something an operator acts on: debug level (one ls -lR of a healthy
    // collection writes no log line).
    writers.vds.note = [](const std::string& m) { log_once(LogLevel::Debug, m); };
    // The view is planned at a stat: no coordinate values from a server then,
    // and with allow_other none from another file than the dataset's own (a
    // stat would tell other users' bytes: the axis is then an index axis).
    if (options.serves_other_users)
        writers.vds.may_read_coordinates = [](const ArraySource& s) { return !s.draws_on_other_files(); };
    else
        writers.vds.may_read_coordinates = [](const ArraySource& s) { return !agg::draws_on_remote_objects(s); };
    // Partition files count against open_files= too (mount and export alike):
    // the backend's dataset cache, which its aggregations open partitions in,
    // keeps at most that many open, and never more than RLIMIT_NOFILE allows.
    Backend b;
    agg::DatasetCache* const cache = b.dataset_cache;
    cache->set_capacity(std::min(options.open_files, agg::descriptor_budget()));
    cache->set_serves_other_users(options.serves_other_users);  // local Zarr fragments
    netcdf::DecodedChunkCache::shared().set_capacity(options.cache_mem);
    agg::set_decoded_chunk_capacity(options.cache_mem);
    set_metadata_limits(options.metadata_mem);
    auto confined = std::make_shared<const ConfinedRoots>(aggregation.allowed_roots);
    b.confined = confined;
    b.sniff = [confined](const std::string& path) { return sniff_source_format(path, confined.get()); };
    b.is_aggregation = [confined](const std::string& path) { return is_aggregation_file(path, confined.get()); };
    b.open_dataset = [aggregation, confined, cache](const std::string& path,
                                                    bool is_aggregation) -> std::shared_ptr<const Dataset> {
        // A reference set reads like an aggregation, whichever way it was asked for (commands ask by name).
        if (is_aggregation || sniff_source_format(path, confined.get()) == SourceFormat::ReferenceSet)
            return presentable(open_aggregation(path, aggregation, *cache));  // confined by its PathPolicy
        struct stat st {};
        if (confined->stat(path, st) && S_ISDIR(st.st_mode))  // a store directory: *.zarr/ or *.vds/
            return path.ends_with(".zarr") ? presentable(open_zarr_store(path, *confined, aggregation))
                                           : open_vds_directory_dataset(path, *confined);
        return presentable(open_single_file_dataset(OpenFile::open(path, confined.get())));
    };
    b.source_files = [](const Dataset& dataset) {
        std::vector<std::string> files = agg::files_drawn_on(dataset);
        // A *.vds/ folder: every member read (the caller check tests each).
        for (auto& member : vds::vds_member_files(dataset)) files.push_back(std::move(member));
        // A *.zarr/ folder: its folders and metadata files (docs/zarr.md).
        for (auto& member : zarr_store_files(dataset)) files.push_back(std::move(member));
        return files;
    };
    b.first_unreadable = [confined](std::span<const std::string> files) { return first_unreadable(files, *confined); };
    b.draws_on_remote = [](const Dataset& dataset) { return agg::draws_on_remote_objects(dataset); };
    b.cheap_verdict = [writers](const Dataset& dataset, const std::string& view) {
        return view_format_named(view, "view").verdict(dataset, writers);
    };
    b.make_view = [writers, others = options.serves_other_users](std::shared_ptr<const Dataset> dataset,
                                                                 const std::string& view,
                                                                 const std::string& name) -> std::shared_ptr<const VirtualFile> {
        if (others && view == "ds" && writers.ds.values == DsViewOptions::Values::Cf && draws_on_other_files(*dataset))
            throw UsageError(dataset->origin + ": with ds_values=cf the .ds view's size depends on every value, and "
                                               "with allow_other no size is computed from other files' bytes");
        // What a view builds (headers, slabs, page tables) counts as its file's metadata.
        MetadataScope scope(dataset->origin);
        auto file = view_format_named(view, "view").build(std::move(dataset), writers, name);
        return holding(std::move(file), scope.take());
    };
    return b;
}

}  // namespace ncafs::fs
