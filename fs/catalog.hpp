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
// other JSON files are plain files.
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
// from the dataset's metadata (aggregation/zarr_view/): its entries are
// ViewFolder (the store, each array) and View (metadata and chunk files,
// Entry::name "NAME.zarr/VAR/0.0"); a listing of an array's folder names
// its chunks one by one as the kernel asks (FolderListing), never all at once.
//
// Every lookup, listing, pre-check and open walks from an fd of SOURCE with
// every component confined (io/confined_open.hpp): symlinks are followed
// only while they stay inside SOURCE, whatever is swapped meanwhile.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/confined_open.hpp"
#include "io/lru_cache.hpp"
#include "io/open_file.hpp"
#include "codecs/virtual_file.hpp"
#include "fs/backend.hpp"
#include "fs/cache_keys.hpp"
#include "fs/partition_sweeps.hpp"
#include "fs/options.hpp"
#include "aggregation/zarr_view/zarr_store_layout.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

enum class EntryKind { Directory, RealFile, View, ViewFolder };

struct Entry {
    EntryKind kind = EntryKind::RealFile;
    std::string real_path;  // the directory, the real file, or the aggregation file
    std::string view;       // for View: the format's extension (fs/view_registry.hpp)
    std::string name;       // for View: the virtual file name (NAME.ncs records it); in a folder view: its path from the folder's parent
    bool aggregation = false;  // for View: real_path is an aggregation file
    int lod = 0;            // for View: LOD level of NAME.lodN.EXT (0: the full dataset)
    struct stat st {};      // stat of real_path (symlinks followed)
    uint64_t size = 0;      // bytes served (the view's size for View)
    FileIdentity identity() const;
};

struct DirEntry {
    std::string name;
    bool directory = false;
};

// The names of a folder of a folder view, computed as they are asked for.
struct FolderListing {
    std::shared_ptr<const agg::zarr_view::ZarrStoreLayout> layout;
    agg::zarr_view::ZarrMember folder;
    uint64_t size() const { return layout->listing_size(folder); }
    DirEntry at(uint64_t i) const;
};

// How a regular file is served.
struct Classification {
    // Plain: no dataset; Aggregation; Broken: looks like an aggregation but
    // cannot be served as one (shown as its bytes, no twins: a view of the
    // aggregation file's own variables would mislead); Dataset: a netCDF, ds or ncstream file.
    enum Kind { Plain, Aggregation, Broken, Dataset } kind = Plain;
    uint64_t nc_size = 0;  // size of the nc view (Aggregation)
    bool is_dataset() const { return kind == Aggregation || kind == Dataset; }
};

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
    std::vector<DirEntry> list(const std::string& virtual_dir);
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
    bool draws_on_remote(const Entry& entry);
    // Every file a non-directory entry draws on: the real file, or a view's
    // source and (aggregation) its partition files. Cached like the views.
    std::shared_ptr<const std::vector<std::string>> source_files(const Entry& entry);
    // The attributes shown for an entry: source owner and mode (views: write
    // bits removed), size served, 64 KiB st_blksize.
    struct stat attributes(const Entry& entry) const;
    // The real file of a RealFile entry, opened confined to SOURCE
    // (O_NONBLOCK, regular files only); on EMFILE/ENFILE idle cached
    // datasets are closed and the open retried once.
    OpenResult open_real_file(const Entry& entry);

    // Counters for tests and logging: full classifications, magic sniffs,
    // aggregation pre-checks, datasets opened (parsed).
    size_t classification_count() const;
    size_t sniff_count() const;
    size_t precheck_count() const;
    size_t dataset_open_count() const;

private:
    struct ListedSource;  // a dataset file of a folder being listed (catalog.cpp)
    // Whether the regular file `name` of a listed folder shows under its own
    // name; a dataset file is added to `sources` for its twins.
    bool list_regular_file(const std::string& name, const std::string& path, struct stat& st, bool have_stat,
                           const std::set<std::string>& names, std::vector<ListedSource>& sources);
    // The twin views (and LOD and classic names) of the listed dataset files.
    void list_twins(std::vector<ListedSource>& sources, const std::set<std::string>& names,
                    std::vector<DirEntry>& out);
    std::optional<Entry> resolve_in(const std::string& real_dir, const std::string& name);
    // A path below a folder view (NAME.zarr/...): the entry there, or an
    // empty optional when nothing is; nullopt when the path is below no folder view.
    std::optional<std::optional<Entry>> resolve_below_folder_view(const std::string& virtual_path);
    // The member of a folder view's entry `store` at `member` ("VAR/0.0").
    std::optional<Entry> folder_view_member(const Entry& store, const std::string& member);
    // The Zarr layout of a folder view's dataset (cached by dataset and LOD);
    // throws when the dataset cannot be read.
    std::shared_ptr<const agg::zarr_view::ZarrStoreLayout> zarr_layout(const Entry& entry);
    // Whether the folder view of v can be served (its layout made); logged once when not.
    bool folder_view_servable(const Entry& v);
    // A folder NAME.vds holding a VolumeDataLayout file (an OpenVDS volume in
    // the object-store directory form) or NAME.zarr holding .zgroup, .zarray
    // or zarr.json (a Zarr store): shown as NAME.nc/.ds/.ncs/.vds, not as a folder.
    bool is_store_directory(const std::string& name, const std::string& path) const;
    // stat following symlinks, but only when the final target lies inside SOURCE.
    bool stat_within_source(const std::string& path, struct stat& st) const;
    Classification classify(const std::string& path, const struct stat& st);
    // precheck_aggregation (aggregation/read/precheck.hpp) of the file,
    // opened confined; cached when the opened file is the one `st` describes.
    bool may_be_aggregation(const std::string& path, const struct stat& st);
    // Names that are datasets only as reference sets: *.json and refs=GLOB names.
    bool only_reference_sets(const std::string& path) const;
    // source_stem, or the stem of a refs=GLOB name.
    std::optional<std::pair<std::string, int>> listed_stem(const std::string& name) const;
    // The refs=GLOB names in real_dir whose stem is `stem` (one directory read; none without refs=).
    std::vector<std::string> glob_sources(const std::string& real_dir, const std::string& stem);
    SourceFormat sniff(const std::string& path, const struct stat& st);
    std::shared_ptr<const Dataset> dataset(const std::string& path, const struct stat& st, bool aggregation);
    // The dataset a view of LOD `lod` shows (lod 0: the file's own).
    std::shared_ptr<const Dataset> dataset_at(const std::string& path, const struct stat& st, bool aggregation, int lod);
    std::shared_ptr<const VirtualFile> view_of(const std::string& path, const struct stat& st, bool aggregation,
                                               const std::string& view, const std::string& name, int lod,
                                               uint64_t epoch = 0);
    std::optional<Entry> resolve_twin(const std::string& real_dir, const std::string& name);
    // The dataset file `candidate` of real_dir (a regular file or a VDS
    // folder classified as a dataset), as a View entry (view fields unset),
    // and its classification; nullopt otherwise.
    std::optional<std::pair<Entry, Classification>> dataset_source(const std::string& real_dir,
                                                                  const std::string& candidate);
    // True when the dataset at path has LOD views: a variable of rank >= 2,
    // and an aggregation or more than lod_min_size bytes of values; false,
    // logged, when it cannot be read. Cached by identity.
    bool dataset_has_lods(const std::string& path, const struct stat& st, bool aggregation);
    // {STEM.lodN.EXT, EXT, N} for every level and enabled view, when the dataset at path has LOD views.
    struct LodName {
        std::string name, view;
        int level;
    };
    std::vector<LodName> lod_names(const std::string& stem, const std::string& path, const struct stat& st,
                                   bool aggregation);
    std::optional<Entry> resolve_classic_view(const std::string& real_dir, const std::string& name);
    // Whether the view of entry v (view fields set) can be served: from the
    // caches of sizes and verdicts, else by building it (v.size set), or,
    // when !need_size and the backend has a cheap verdict for the view
    // (vds), from that.
    bool view_servable(Entry& v, bool need_size = true);
    // The backend's cheap verdict on v's view, remembered; nullopt when it has none.
    std::optional<bool> judge_cheaply(const Entry& v);
    // Builds the view of v for its size; false, logged and (unless the cause
    // may pass, such as EMFILE) remembered as refused, when it cannot be made.
    bool size_view(Entry& view_entry);
    void refuse_view(const Entry& view_entry);
    // The dataset of the file; null when it cannot be read (logged once per
    // file), `remembered` false when the cause may pass (EMFILE...).
    std::shared_ptr<const Dataset> readable_dataset(const std::string& path, const struct stat& st, bool aggregation,
                                                     bool& remembered);
    // HDF5 signature at offset 0 (cached like the sniff).
    bool is_netcdf4(const std::string& path, const struct stat& st);
    bool nc_view_enabled() const;

    std::string root_;
    std::shared_ptr<const ConfinedRoots> confined_;  // SOURCE, opened
    ViewOptions options_;
    Backend backend_;

    // Lock order: parsing and opening run outside it; a dropped dataset may close
    // a netCDF-4 file under it (netcdf_library_mutex).
    mutable Mutex mutex_;
    // Bounded LRUs of classifications, sniffs, datasets and built views
    // (fs/cache_keys.hpp: a changed file is another key).
    template <typename Key, typename Value>
    using Lru = LruCache<Key, Value, CacheKeyHash>;
    Lru<FileKey, Classification> classifications_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, SourceFormat> formats_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, bool> netcdf4_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, bool> prechecks_ NCAFS_GUARDED_BY(mutex_);  // "may be an aggregation" (the header pre-check)
    Lru<ViewKey, uint64_t> view_sizes_ NCAFS_GUARDED_BY(mutex_);
    Lru<ViewKey, bool> view_verdicts_ NCAFS_GUARDED_BY(mutex_);  // false: cannot be built (never listed); true: a cheap verdict said it can
    Lru<DatasetKey, bool> lod_datasets_ NCAFS_GUARDED_BY(mutex_);  // dataset_has_lods
    Lru<DatasetKey, bool> remote_datasets_ NCAFS_GUARDED_BY(mutex_);  // draws_on_remote
    Lru<DatasetKey, bool> unreadable_ NCAFS_GUARDED_BY(mutex_);    // datasets that do not parse
    Lru<DatasetKey, std::shared_ptr<const Dataset>> datasets_ NCAFS_GUARDED_BY(mutex_);
    Lru<ViewKey, std::shared_ptr<const VirtualFile>> views_ NCAFS_GUARDED_BY(mutex_);
    Lru<ViewKey, std::shared_ptr<const agg::zarr_view::ZarrStoreLayout>> zarr_layouts_ NCAFS_GUARDED_BY(mutex_);
    Lru<FileKey, std::shared_ptr<const std::vector<std::string>>> source_files_ NCAFS_GUARDED_BY(mutex_);
    PartitionSweeps sweeps_{64};  // is every partition of an aggregation readable (its own lock)
    size_t classification_count_ NCAFS_GUARDED_BY(mutex_) = 0;
    size_t sniff_count_ NCAFS_GUARDED_BY(mutex_) = 0;
    size_t precheck_count_ NCAFS_GUARDED_BY(mutex_) = 0;
    size_t dataset_open_count_ NCAFS_GUARDED_BY(mutex_) = 0;
};

}  // namespace ncafs::fs
