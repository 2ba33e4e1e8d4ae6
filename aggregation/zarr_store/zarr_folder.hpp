// The folder of a Zarr directory store, held open: every key is a path
// beneath it, opened from the folder's fd one component at a time without
// following any symlink (O_NOFOLLOW), as a *.vds/ folder's members. A key
// that is empty, absolute, or holds an empty, "." or ".." component is
// refused before anything is opened: nothing is read outside the store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/zarr_store/zarr_keys.hpp"
#include "io/confined_open.hpp"
#include "io/open_file.hpp"

namespace ncafs::agg {

class ZarrFolder final : public ZarrKeys {
public:
    // members_readers (a store named as a fragment, with allow_other: the
    // caller check covers its folder only): every member opened must be
    // readable by all of them, as the array's readers are for chunks.
    ZarrFolder(UniqueFd fd, std::string path, std::optional<ZarrReaders> members_readers = std::nullopt)
        : fd_(std::move(fd)), path_(std::move(path)), members_readers_(members_readers) {}

    const std::string& path() const override { return path_; }

    // The regular file at key (a symlink or anything but a regular file is refused).
    std::shared_ptr<const OpenFile> open(const std::string& key, const ZarrReaders* readers = nullptr,
                                         size_t trusted = 0) const override;
    // No symlink followed.
    bool for_each_subfolder(uint64_t max_entries,
                            const std::function<bool(const std::string&)>& visit) const override;

private:
    UniqueFd fd_;
    std::string path_;
    std::optional<ZarrReaders> members_readers_;
};

// The folder at key ("a/b") beneath the store's folder `store`, each
// component opened without following a link; with readers, each must be
// readable by all of them (as a store's members must). Throws SourceError
// naming it when refused or missing.
UniqueFd open_store_subfolder(int store, const std::string& path, const std::string& key, const ZarrReaders* readers);

}  // namespace ncafs::agg
