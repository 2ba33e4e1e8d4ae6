// The namespace of a mount: how the SOURCE tree appears. Directories are
// mirrored; an aggregation NAME.nca or NAME.nc appears as NAME.nc (its nc
// view); every other regular file appears as itself. Every dataset file
// (aggregation, netCDF, ds, ncstream; named *.nc, *.nca, *.ds, *.ncs and
// recognised by magic number) also appears as its twins NAME.nc, NAME.ds,
// NAME.ncs, NAME.vds (the enabled views); a real file always wins a name, and
// where several sources could give a twin, the first of NAME.nc, NAME.nca,
// NAME.ds, NAME.ncs, NAME.nc4, NAME.h5, NAME.hdf5, NAME.vds, NAME.json that
// is a dataset gives it. A kerchunk reference set (NAME.json, or a name
// matching refs=GLOB, recognised by content) is served like an aggregation;
// other JSON files are real files only.
// A netCDF-4 NAME.nc that is not an aggregation (kept as its own bytes) has
// its classic view NAME.classic.nc. A folder NAME.vds holding a
// VolumeDataLayout (an OpenVDS volume in the object-store directory form) is
// not shown as a folder but as NAME.nc/.ds/.ncs like a NAME.vds container.
// With lods=N, every aggregation, and every dataset holding more than
// lod_min_size bytes, with a variable of rank >= 2 also has NAME.lod1.EXT ...
// NAME.lodN.EXT for each enabled view EXT (codecs/lod_dataset.hpp).
//
// A listing names only what a lookup serves: a twin, classic or LOD name is
// listed once its view was built (so its dataset parsed); a view that cannot
// be built is not listed, and the refusal is remembered. Listing therefore
// parses each dataset that has twins once per identity; a *.nc is
// pre-checked (its header's attribute names) once per identity too.
// Everything is cached by (path, device, inode, size, mtime, ctime), bounded.
// The folder view NAME.zarr (views= zarr) is a folder of files computed
// from the dataset's metadata (fs/folder_views.hpp).
//
// Every lookup, listing, pre-check and open walks from an fd of SOURCE with
// every component confined (io/confined_open.hpp): symlinks are followed
// only while they stay inside SOURCE, whatever is swapped meanwhile.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/virtual_file.hpp"
#include "fs/backend.hpp"
#include "fs/catalog_entry.hpp"
#include "fs/file_classifier.hpp"
#include "fs/folder_views.hpp"
#include "fs/listing.hpp"
#include "fs/options.hpp"
#include "fs/partition_sweeps.hpp"
#include "fs/view_store.hpp"
#include "io/confined_open.hpp"
#include "io/open_file.hpp"

namespace ncafs::fs {

// The namespace of a mount, composed of its parts: FileClassifier (which
// file is what, fs/file_classifier.hpp), ViewStore (datasets and views,
// fs/view_store.hpp), FolderViews (NAME.zarr, fs/folder_views.hpp) and
// Listing (fs/listing.hpp); the catalog itself resolves names.
class Catalog {
public:
    Catalog(std::string source_root, ViewOptions options, Backend backend);

    const std::string& source_root() const { return root_; }
    const ViewOptions& options() const { return options_; }
    // The datasets and partitions the aggregations keep open (the backend's).
    agg::DatasetCache& dataset_cache() const { return *backend_.dataset_cache; }

    // The entry at a virtual path relative to the root ("" is the root, no
    // leading slash); nullopt when nothing is shown there.
    std::optional<Entry> resolve(const std::string& virtual_path);
    // The names shown in a directory (by virtual path); throws std::system_error.
    std::vector<DirEntry> list(const std::string& virtual_dir) { return listing_.list(virtual_dir); }
    // The listing of a folder of a folder view (NAME.zarr, NAME.zarr/VAR), or nullopt for any other path.
    std::optional<FolderListing> folder_listing(const std::string& virtual_dir);
    // The view of a View entry, from the cache or built; throws on failure.
    // epoch: the access generation its opener was judged at (ViewKey::epoch).
    std::shared_ptr<const VirtualFile> open_view(const Entry& entry, uint64_t epoch = 0);
    // The allowed roots partitions are opened beneath (SOURCE's alone when
    // the backend names none): the caller check walks them as the caller.
    std::shared_ptr<const ConfinedRoots> allowed_roots() const;
    // For a view of an aggregation: the first partition file that is absent
    // or unreadable now (Backend::first_unreadable: one faccessat per
    // partition file, from its folder opened confined), else nullopt; an
    // empty string while not known yet (a large aggregation is swept in the
    // background: fs/partition_sweeps.hpp). No system call at all when the
    // answer for this aggregation is known and no partition change was seen
    // since (the partition watch bumps DatasetCache::generation on any change).
    std::optional<std::string> absent_partition(const Entry& entry);
    // For a view of an aggregation: whether a partition is a remote object.
    bool draws_on_remote(const Entry& entry) { return views_.draws_on_remote(entry); }
    // Every file a non-directory entry draws on: the real file, or a view's
    // source and (aggregation) its partition files. Cached like the views.
    std::shared_ptr<const std::vector<std::string>> source_files(const Entry& entry) {
        return views_.source_files(entry);
    }
    // The attributes shown for an entry: source owner and mode (views: write
    // bits removed), size served, 64 KiB st_blksize.
    struct stat attributes(const Entry& entry) const;
    // The real file of a RealFile entry, opened confined to SOURCE
    // (O_NONBLOCK, regular files only); on EMFILE/ENFILE idle cached
    // datasets are closed and the open retried once.
    OpenResult open_real_file(const Entry& entry);

    // Counters for tests and logging: full classifications, magic sniffs,
    // aggregation pre-checks, datasets opened (parsed).
    size_t classification_count() const { return classifier_.classification_count(); }
    size_t sniff_count() const { return classifier_.sniff_count(); }
    size_t precheck_count() const { return classifier_.precheck_count(); }
    size_t dataset_open_count() const { return views_.dataset_open_count(); }

private:
    std::optional<Entry> resolve_in(const std::string& real_dir, const std::string& name);
    // A path below a folder view (NAME.zarr/...): the entry there, or an
    // empty optional when nothing is; nullopt when the path is below no folder view.
    std::optional<std::optional<Entry>> resolve_below_folder_view(const std::string& virtual_path);
    // A name with no real file behind it: a twin, classic or LOD view.
    std::optional<Entry> resolve_twin(const std::string& real_dir, const std::string& name);
    // The dataset file `candidate` of real_dir (a regular file or a VDS
    // folder classified as a dataset), as a View entry (view fields unset),
    // and its classification; nullopt otherwise.
    std::optional<std::pair<Entry, Classification>> dataset_source(const std::string& real_dir,
                                                                  const std::string& candidate);
    std::optional<Entry> resolve_classic_view(const std::string& real_dir, const std::string& name);
    bool nc_view_enabled() const;

    std::string root_;
    std::shared_ptr<const ConfinedRoots> confined_;  // SOURCE, opened
    ViewOptions options_;
    Backend backend_;

    // The parts, each with its own leaf lock (docs/design.md "Locks"): none
    // holds its lock while it calls another, so they have no order between them.
    ViewStore views_;
    FileClassifier classifier_;
    FolderViews folders_;
    Listing listing_;
    PartitionSweeps sweeps_{64};  // is every partition of an aggregation readable (its own lock)
};

}  // namespace ncafs::fs
