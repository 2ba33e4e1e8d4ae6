#include "fs/folder_views.hpp"

#include <sys/stat.h>

#include "aggregation/zarr_view/zarr_member_files.hpp"
#include "fs/backend.hpp"
#include "fs/file_classifier.hpp"
#include "fs/log.hpp"
#include "fs/view_store.hpp"
#include "io/error.hpp"

namespace ncafs::fs {

namespace {

// The path of a folder view's entry below its store ("VAR/0.0"; "" for the store itself).
std::string path_in_store(const Entry& entry) {
    const auto slash = entry.name.find('/');
    return slash == std::string::npos ? std::string() : entry.name.substr(slash + 1);
}

}  // namespace

DirEntry FolderListing::at(uint64_t i) const {
    auto [name, folder_entry] = layout->listing_entry(folder, i);
    return {std::move(name), folder_entry};
}

FolderViews::FolderViews(const ViewOptions& options, FileClassifier& classifier, ViewStore& views)
    : options_(options), classifier_(classifier), views_(views) {
    layouts_.set_capacity(views.open_capacity());
}

std::shared_ptr<const VirtualFile> FolderViews::open_member(const Entry& entry) {
    // A member's file costs no more than its metadata: made at each open, from the cached layout.
    auto store = layout(entry);
    const bool below = entry.name.find('/') != std::string::npos;
    auto found = below ? store->member(path_in_store(entry)) : std::nullopt;
    if (!found) throw UsageError(entry.real_path + ": " + entry.name + " is no longer in its .zarr view");
    return agg::zarr_view::zarr_member_file(std::move(store), *found);
}

std::optional<Entry> FolderViews::member(const Entry& store, const std::string& member) {
    auto found = layout(store)->member(member);
    if (!found) return std::nullopt;
    Entry e = store;
    e.name = store.name + "/" + member;
    if (found->kind == agg::zarr_view::ZarrMember::Kind::Folder) return e;
    e.kind = EntryKind::View;
    e.size = found->size();
    return e;
}

std::optional<FolderListing> FolderViews::listing(const Entry& folder) {
    auto store = layout(folder);
    auto found = store->member(path_in_store(folder));
    if (!found) return std::nullopt;
    return FolderListing{std::move(store), *found};
}

std::shared_ptr<const agg::zarr_view::ZarrStoreLayout> FolderViews::layout(const Entry& entry) {
    ViewKey key = entry.view_key();
    key.name.clear();  // one layout for the store and every member below it
    {
        MutexLock lock(mutex_);
        if (auto hit = layouts_.get(key)) return *hit;
    }
    // With zarr_chunks=stored, big-endian where values may lie in classic
    // files as they are (a classic file, the partitions of an aggregation:
    // spliced); else little-endian, computed, which every reader reads
    // (netcdf-c 4.9's NCZarr reads big-endian chunks unswapped).
    const bool classic = options_.zarr_chunks_stored &&
                         (entry.aggregation || (S_ISREG(entry.st.st_mode) &&
                                                classifier_.sniff(entry.real_path, entry.st) == SourceFormat::Netcdf &&
                                                !classifier_.is_netcdf4(entry.real_path, entry.st)));
    auto made = std::make_shared<const agg::zarr_view::ZarrStoreLayout>(
        views_.dataset_at(entry.real_path, entry.st, entry.aggregation, entry.lod), classic, options_.zarr_format,
        options_.zarr_chunks_stored);
    for (const auto& note : made->notes()) log_once(LogLevel::Warning, entry.real_path + ": " + note);
    MutexLock lock(mutex_);
    layouts_.put(key, made);
    return made;
}

bool FolderViews::servable(const Entry& v) {
    // Remembered like the sizes of file views: listing again opens no dataset.
    if (auto verdict = views_.verdict(v)) return *verdict;
    bool remembered = true;
    if (!views_.readable_dataset(v.real_path, v.st, v.aggregation, remembered)) {
        if (remembered) views_.remember_verdict(v, false);
        return false;
    }
    bool made = true;
    try {
        layout(v);
    } catch (const std::exception& ex) {
        log_once(LogLevel::Debug, v.real_path + ": no " + v.name + " view: " + ex.what());
        if (failure_may_pass(ex)) return false;
        made = false;
    }
    views_.remember_verdict(v, made);
    return made;
}

}  // namespace ncafs::fs
