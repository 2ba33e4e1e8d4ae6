// What the catalog needs from the layers below (aggregation, codecs): which
// reader a file belongs to (by magic number), whether it is an aggregation,
// its dataset, and the virtual file of one view of a dataset. A small struct
// of functions so that the daemon mechanics can be tested with fakes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aggregation/read/dataset_cache.hpp"
#include "io/confined_open.hpp"
#include "codecs/dataset.hpp"
#include "codecs/sniff.hpp"
#include "codecs/virtual_file.hpp"
#include "fs/options.hpp"

namespace ncafs::fs {

// The reader a file's first bytes call for.
enum class SourceFormat {
    None,      // not a dataset file
    Netcdf,    // CDF-1/2/5 or HDF5 magic: ncafs::open_dataset (or an aggregation)
    Vds,       // OpenVDS container (or a NAME.vds/ folder holding a volume): ncafs::open_dataset, codecs/vds
    Ds,        // ds signature: ds reader
    Ncstream,  // ncstream MAGIC_START + header/data magic: ncstream reader
    ReferenceSet,  // a kerchunk reference set (JSON): served like an aggregation
};

// The reader for a format told by codecs/sniff.hpp.
SourceFormat source_format_of(FileFormat format);
// Sniffs the first bytes of path (one open, one pread; a second one for a
// JSON text, which may be a reference set); None on any error
// (FIFOs and devices too: opened O_NONBLOCK, regular files only). `within`:
// open confined to those roots.
SourceFormat sniff_source_format(const std::string& path, const ConfinedRoots* within = nullptr);

// The cache of opened datasets and partitions that the aggregations of the
// real backend share (one per process: open_files= bounds it, and the
// partition watch bumps its generation): the default of
// Backend::dataset_cache, which make_backend bounds and its aggregations
// open partitions in. fs/ reaches it only through a Backend (the catalog's
// dataset_cache()) or here; commands that open aggregations without a
// backend (cli/check.cpp, cli/inspect.cpp) pass agg::DatasetCache::shared()
// to load_aggregation themselves.
agg::DatasetCache& shared_dataset_cache();

struct Backend {
    // The full (possibly slow) test; only called after precheck_aggregation said Maybe.
    std::function<bool(const std::string& path)> is_aggregation;
    // The dataset of the file at path: open_aggregation when `aggregation`,
    // else the reader of its magic. Metadata only; throws when it cannot be read.
    std::function<std::shared_ptr<const Dataset>(const std::string& path, bool aggregation)> open_dataset;
    // View `view` (an extension of fs/view_registry.hpp) of a dataset;
    // `name` is the virtual file's name (the ncstream header records it).
    // Throws when the view cannot hold the dataset.
    std::function<std::shared_ptr<const VirtualFile>(std::shared_ptr<const Dataset> dataset, const std::string& view,
                                                     const std::string& name)>
        make_view;
    // For a view whose build is costly (vds: page tables of up to 2^20
    // chunks), whether it can be made, from the dataset's metadata alone:
    // "" when it can, else the reason; nullopt when there is no such verdict
    // (build the view to know). Unset: never.
    std::function<std::optional<std::string>(const Dataset& dataset, const std::string& view)> cheap_verdict;
    // Every file a dataset draws on (its origin, an aggregation's partitions);
    // empty: just the origin.
    std::function<std::vector<std::string>(const Dataset& dataset)> source_files;
    // The first of `files` that is absent or unreadable now (access(2) with
    // R_OK), each tested from its folder's descriptor opened confined to the
    // allowed roots: one open per folder, one faccessat per file (its last
    // component, if a symlink, not followed). Unset: none.
    std::function<std::optional<std::string>(std::span<const std::string> files)> first_unreadable;
    // Whether a dataset reads partitions from remote objects (URLs); unset: never.
    std::function<bool(const Dataset& dataset)> draws_on_remote;
    // The datasets and partitions the aggregations keep open (open_dataset's
    // and the catalog's: sizes, generation, drop_idle).
    agg::DatasetCache* dataset_cache = &shared_dataset_cache();
    // The allowed roots every file is opened beneath (null: SOURCE's alone).
    std::shared_ptr<const ConfinedRoots> confined;
    // Cheap magic sniff; defaults to sniff_source_format.
    std::function<SourceFormat(const std::string& path)> sniff = [](const std::string& p) {
        return sniff_source_format(p);
    };
};

// The real backend: aggregation/ + codecs/open_dataset (every reader), with allowed
// roots {allowed_roots..., options.extra_allowed_roots...}, the options'
// rewrites, cdf_version and ds_values. Every file is opened confined to
// those roots (io/confined_open.hpp) and read through that fd only.
// roots_rule: why the roots are these, in the message refusing a path
// outside them (AggregationOptions::roots_rule).
Backend make_backend(const ViewOptions& options, const std::vector<std::string>& allowed_roots,
                     const std::string& roots_rule = {});

}  // namespace ncafs::fs
