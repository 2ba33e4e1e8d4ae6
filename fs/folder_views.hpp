// The catalog's folder views (fs/catalog.hpp): NAME.zarr (views= zarr), a
// folder of files computed from a dataset's metadata (aggregation/zarr_view/).
// Its entries are ViewFolder (the store, each array) and View (metadata and
// chunk files, Entry::name "NAME.zarr/VAR/0.0"); a listing of an array's
// folder names its chunks one by one as the kernel asks (FolderListing),
// never all at once. The layout of each dataset (and LOD) is cached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "aggregation/zarr_view/zarr_store_layout.hpp"
#include "codecs/virtual_file.hpp"
#include "fs/cache_keys.hpp"
#include "fs/catalog_entry.hpp"
#include "fs/options.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

class FileClassifier;
class ViewStore;

// The names of a folder of a folder view, computed as they are asked for.
struct FolderListing {
    std::shared_ptr<const agg::zarr_view::ZarrStoreLayout> layout;
    agg::zarr_view::ZarrMember folder;
    uint64_t size() const { return layout->listing_size(folder); }
    DirEntry at(uint64_t i) const;
};

class FolderViews {
public:
    // `options`, `classifier` and `views` are the catalog's and outlive this.
    FolderViews(const ViewOptions& options, FileClassifier& classifier, ViewStore& views);

    // Whether the folder view of v (a ViewFolder entry of the store itself)
    // can be served (its layout made); remembered like the verdicts of file
    // views, logged once when not.
    bool servable(const Entry& v);
    // The member of the folder view `store` at `member` ("VAR/0.0"), or nullopt.
    std::optional<Entry> member(const Entry& store, const std::string& member);
    // The listing of a ViewFolder entry (the store or an array's folder), or nullopt.
    std::optional<FolderListing> listing(const Entry& folder);
    // The file of a View entry below a folder view; throws when it is gone.
    std::shared_ptr<const VirtualFile> open_member(const Entry& entry);

private:
    // The Zarr layout of a folder view's dataset (cached by dataset and LOD);
    // throws when the dataset cannot be read.
    std::shared_ptr<const agg::zarr_view::ZarrStoreLayout> layout(const Entry& entry);

    const ViewOptions& options_;
    FileClassifier& classifier_;
    ViewStore& views_;

    // A leaf lock: held only to look up or keep a layout, never while one is
    // made or another part of the catalog is called.
    mutable Mutex mutex_;
    LruCache<ViewKey, std::shared_ptr<const agg::zarr_view::ZarrStoreLayout>, CacheKeyHash> layouts_
        NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::fs
