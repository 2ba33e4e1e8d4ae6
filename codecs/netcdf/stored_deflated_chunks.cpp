#include "codecs/netcdf/stored_deflated_chunks.hpp"

#include <algorithm>

#include "codecs/checked_math.hpp"

namespace ncafs::netcdf {

namespace {

using Filter = RawChunkPlan::Filter;

class StoredDeflatedChunks final : public DeflatedChunks {
public:
    StoredDeflatedChunks(const RawChunkPlan& plan, std::shared_ptr<const OpenFile> file, std::vector<uint8_t> fill,
                         bool unwritten)
        : storage_(plan.storage),
          shuffle_(plan.pipeline.size() == 2 ? plan.shuffle_size : 0),
          big_endian_(plan.big_endian),
          unwritten_(unwritten),
          fill_(std::move(fill)),
          file_(std::move(file)) {}
    const std::vector<uint64_t>& chunk_shape() const override { return storage_->chunk; }
    uint64_t chunk_count() const override { return storage_->chunks.size(); }
    uint64_t shuffle_size() const override { return shuffle_; }
    bool big_endian() const override { return big_endian_; }
    bool has_unwritten() const override { return unwritten_; }
    const std::vector<uint8_t>& fill() const override { return fill_; }
    const std::shared_ptr<const OpenFile>& file() const override { return file_; }
    std::optional<Place> place(uint64_t index) const override {
        const StoredChunk& c = storage_->chunks.at(index);
        if (c.size == 0) return std::nullopt;
        return Place{c.address, c.size};
    }

private:
    std::shared_ptr<const Hdf5Storage> storage_;
    uint64_t shuffle_;
    bool big_endian_, unwritten_;
    std::vector<uint8_t> fill_;
    std::shared_ptr<const OpenFile> file_;
};

// deflate alone, or shuffle over whole elements then deflate: what Zarr's zlib and shuffle undo.
bool zarr_decodes(const RawChunkPlan& plan) {
    if (plan.pipeline == std::vector<Filter>{Filter::Deflate}) return true;
    return plan.pipeline == std::vector<Filter>{Filter::Shuffle, Filter::Deflate} &&
           plan.shuffle_size == type_size(plan.type);
}

// Why the written chunks' places are unsound ("" when sound): each inside
// the file, within the bound of its shape, none overlapping another.
std::string unsound_places(const RawChunkPlan& plan, uint64_t file_size) {
    std::vector<StoredChunk> written;
    for (const StoredChunk& c : plan.storage->chunks)
        if (c.size > 0) written.push_back(c);
    const uint64_t most = max_stored_bytes(plan);
    for (const StoredChunk& c : written) {
        const auto end = checked::add(c.address, c.size);
        if (!end || *end > file_size)
            return "a chunk of " + plan.dataset + " lies beyond the end of the file";
        if (c.size > most)
            return "a chunk of " + plan.dataset + " is stored in " + std::to_string(c.size) + " bytes, more than a chunk of " +
                   std::to_string(plan.declared_bytes) + " bytes can need";
    }
    std::sort(written.begin(), written.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
    for (size_t i = 1; i < written.size(); ++i)
        if (written[i - 1].address + written[i - 1].size > written[i].address)
            return "two chunks of " + plan.dataset + " overlap in the file";
    return "";
}

}  // namespace

std::shared_ptr<const DeflatedChunks> stored_deflated_chunks(const RawChunkPlan& plan,
                                                             std::shared_ptr<const OpenFile> file,
                                                             std::vector<uint8_t> fill, std::string* why) {
    if (!zarr_decodes(plan)) return nullptr;
    bool unwritten = false;
    for (const StoredChunk& c : plan.storage->chunks) {
        if (c.size == 0 && c.address != 0) return nullptr;  // stored without some of its filters
        unwritten |= c.size == 0;
    }
    if (unwritten && fill.size() != type_size(plan.type)) return nullptr;
    // The file's size as this process saw it, never the survey's (maybe a helper's answer).
    if (std::string unsound = unsound_places(plan, std::min(plan.file_size, file->size())); !unsound.empty()) {
        if (why) *why = unsound;
        return nullptr;
    }
    return std::make_shared<StoredDeflatedChunks>(plan, std::move(file), std::move(fill), unwritten);
}

}  // namespace ncafs::netcdf
