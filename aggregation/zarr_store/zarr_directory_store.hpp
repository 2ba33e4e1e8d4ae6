// A Zarr directory store as a ReferenceStore: its metadata (.zgroup,
// .zattrs, each array's .zarray and .zattrs, v3 zarr.json translated by
// zarr_v3) are read once, when the store is opened, and held as inline
// references; a chunk key ("ARRAY/0.1") is found when it is read: the file
// at the array's chunk key beneath the store's folder, or a range of its
// shard. Chunks are never listed: a store of any number of chunks costs its
// metadata only.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "aggregation/reference_set/reference_store.hpp"
#include "aggregation/zarr_store/zarr_folder.hpp"
#include "aggregation/zarr_store/zarr_v3.hpp"

namespace ncafs::agg {

class ZarrDirectoryStore final : public ReferenceStore {
public:
    // set: the metadata keys, inline; layouts: per array name, where its chunks lie.
    ZarrDirectoryStore(ReferenceSet set, std::shared_ptr<const PathPolicy> paths,
                       std::shared_ptr<const ZarrKeys> folder, std::unordered_map<std::string, ZarrKeyLayout> layouts,
                       std::vector<std::string> files);

    const std::string& file() const override { return folder_->path(); }
    std::optional<Located> locate(const std::string& key, uint64_t max_bytes) const override;
    bool chunks_in_other_files() const override { return true; }
    // The chunk's bytes; a v3 crc32c that follows them is checked.
    std::vector<uint8_t> read(const std::string& key, const Located& where) const override;

    const ZarrKeys& folder() const { return *folder_; }
    // The store's folder, its arrays' folders and the metadata files read (for the caller check).
    const std::vector<std::string>& files() const { return files_; }

private:
    // Who may read the metadata file at key now (allow_other, for its chunks).
    ZarrReaders readers_now(const std::string& metadata_key) const;
    Located located(std::shared_ptr<const OpenFile> file, uint64_t offset, uint64_t length, const std::string& key,
                    uint64_t max_bytes) const;
    std::shared_ptr<const ZarrKeys> folder_;
    std::unordered_map<std::string, ZarrKeyLayout> layouts_;
    std::vector<std::string> files_;
};

}  // namespace ncafs::agg
