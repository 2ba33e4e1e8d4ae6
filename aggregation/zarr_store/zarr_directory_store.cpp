#include "aggregation/zarr_store/zarr_directory_store.hpp"

#include "aggregation/zarr_store/zarr_shards.hpp"
#include "codecs/error.hpp"

namespace ncafs::agg {

namespace {

// The chunk indices of a key suffix written by zarr::chunk_key ("0.3.1"; "0"
// for a scalar); nullopt for anything else (a metadata name).
std::optional<std::vector<uint64_t>> indices_of(const std::string& text, size_t rank) {
    std::vector<uint64_t> index;
    if (rank == 0) return text == "0" ? std::make_optional(index) : std::nullopt;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t dot = std::min(text.find('.', begin), text.size());
        const std::string part = text.substr(begin, dot - begin);
        if (part.empty() || part.size() > 19 || part.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        index.push_back(std::stoull(part));
        begin = dot + 1;
    }
    if (index.size() != rank) return std::nullopt;
    return index;
}

std::string tag_of(const OpenFile& f, uint64_t offset, uint64_t length) {
    const FileIdentity& id = f.identity();
    return std::to_string(id.device) + ":" + std::to_string(id.inode) + ":" + std::to_string(id.mtime_ns) + ":" +
           std::to_string(id.ctime_ns) + ":" + std::to_string(id.size) + "@" + std::to_string(offset) + "+" +
           std::to_string(length);
}

}  // namespace

ZarrReaders ZarrDirectoryStore::readers_now(const std::string& metadata_key) const {
    auto file = folder_->open(metadata_key);
    if (!file) throw SourceError(folder_->path_of(metadata_key), "the array's metadata file is gone");
    return readers_of(file->fd());
}

ZarrDirectoryStore::ZarrDirectoryStore(ReferenceSet set, std::shared_ptr<const PathPolicy> paths,
                                       std::shared_ptr<const ZarrKeys> folder,
                                       std::unordered_map<std::string, ZarrKeyLayout> layouts,
                                       std::vector<std::string> files)
    : ReferenceStore(std::move(set), std::move(paths)),
      folder_(std::move(folder)),
      layouts_(std::move(layouts)),
      files_(std::move(files)) {}

ReferenceStore::Located ZarrDirectoryStore::located(std::shared_ptr<const OpenFile> file, uint64_t offset,
                                                    uint64_t length, const std::string& key, uint64_t max_bytes) const {
    if (length > max_bytes)
        throw SourceError(file->path(), "chunk \"" + key + "\" holds " + std::to_string(length) +
                                            " bytes, more than the bound of " + std::to_string(max_bytes) +
                                            " its array's chunk size allows");
    Located where;
    where.tag = tag_of(*file, offset, length);
    where.file = std::move(file);
    where.offset = offset;
    where.length = length;
    return where;
}

std::optional<ReferenceStore::Located> ZarrDirectoryStore::locate(const std::string& key, uint64_t max_bytes) const {
    if (contains(key)) return ReferenceStore::locate(key, max_bytes);  // metadata, read at open
    const size_t slash = key.find('/');
    auto it = slash == std::string::npos ? layouts_.end() : layouts_.find(key.substr(0, slash));
    if (it == layouts_.end()) return std::nullopt;
    const ZarrKeyLayout& layout = it->second;
    const std::string rest = key.substr(slash + 1);
    auto in_folder = [&](const std::string& k) { return layout.folder.empty() ? k : layout.folder + "/" + k; };
    // With allow_other the array's folder was checked for the caller, what lies beneath it was not.
    auto open_chunk = [&](const std::string& k) {
        if (!layout.readers) return folder_->open(in_folder(k));
        const ZarrReaders readers = readers_of_both(*layout.readers, readers_now(layout.metadata_key));
        return folder_->open(in_folder(k), &readers, layout.folder.empty() ? 0 : 1);
    };
    if (!layout.v3) {  // the array's own keys
        auto file = open_chunk(rest);
        if (!file) return std::nullopt;
        const uint64_t size = file->size();
        return located(std::move(file), 0, size, key, max_bytes);
    }
    auto index = indices_of(rest, layout.rank);
    if (!index) return std::nullopt;
    uint64_t inner = 0;
    if (layout.shards) {  // the shard holding the chunk, and the chunk's place in it (C order)
        for (size_t k = 0; k < index->size(); ++k) {
            const uint64_t per = layout.shards->chunks_per_shard[k];
            inner = inner * per + (*index)[k] % per;
            (*index)[k] /= per;
        }
    }
    auto file = open_chunk(v3_chunk_key(layout, *index));
    if (!file) return std::nullopt;
    ShardEntry range{0, file->size()};
    if (layout.shards) {
        auto entry = shard_entry(*file, *layout.shards, inner);
        if (!entry) return std::nullopt;
        range = *entry;
    }
    if (layout.chunk_crc32c) {  // its checksum follows the bytes given to the codecs (checked by read)
        if (range.length < 4) throw SourceError(file->path(), "chunk \"" + key + "\" is shorter than its crc32c");
        range.length -= 4;
    }
    return located(std::move(file), range.offset, range.length, key, max_bytes);
}

std::vector<uint8_t> ZarrDirectoryStore::read(const std::string& key, const Located& where) const {
    std::vector<uint8_t> bytes = ReferenceStore::read(key, where);
    const size_t slash = key.find('/');
    auto it = slash == std::string::npos ? layouts_.end() : layouts_.find(key.substr(0, slash));
    if (!where.file || it == layouts_.end() || !it->second.chunk_crc32c) return bytes;
    uint8_t stored[4];
    where.file->pread_exact(stored, 4, where.offset + where.length);
    if (crc32c(bytes) != stored_crc32c(stored))
        throw SourceError(where.file->path(), "chunk \"" + key + "\" (bytes " + std::to_string(where.offset) + " + " +
                                                  std::to_string(where.length) + ") fails its crc32c check");
    return bytes;
}

}  // namespace ncafs::agg
