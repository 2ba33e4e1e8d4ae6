#include "aggregation/zarr_view/zarr_member_files.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/types.hpp"

namespace ncafs::agg::zarr_view {

namespace {

static_assert(std::endian::native == std::endian::little, "little-endian chunks are read in native order");

void check_range(uint64_t offset, uint64_t length, uint64_t size) {
    if (offset > size || length > size - offset)
        throw UsageError("read [" + std::to_string(offset) + ", +" + std::to_string(length) +
                         ") outside a .zarr view file of " + std::to_string(size) + " bytes");
}

class MetadataFile final : public VirtualFile {
public:
    MetadataFile(std::shared_ptr<const ZarrStoreLayout> layout, const std::string* text)
        : layout_(std::move(layout)), text_(text) {}
    uint64_t size() const override { return text_->size(); }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        check_range(offset, out.size(), size());
        std::memcpy(out.data(), text_->data() + offset, out.size());
    }

private:
    std::shared_ptr<const ZarrStoreLayout> layout_;  // holds the text
    const std::string* text_;
};

// A chunk as the variable's file stores it: its bytes are the file's, spliced where the read path can.
class StoredChunkFile final : public VirtualFile {
public:
    StoredChunkFile(std::shared_ptr<const ZarrStoreLayout> layout, const DeflatedChunks& stored,
                    DeflatedChunks::Place place)
        : layout_(std::move(layout)), file_(stored.file()), place_(place) {}
    uint64_t size() const override { return place_.length; }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        check_range(offset, out.size(), size());
        file_->pread_exact(out.data(), out.size(), place_.offset + offset);
    }
    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        check_range(offset, length, size());
        if (length == 0) return {};
        return {ViewPiece{offset, length, FileExtent{file_, place_.offset + offset, length}, std::nullopt}};
    }

private:
    std::shared_ptr<const ZarrStoreLayout> layout_;  // holds the dataset, which holds the file open
    std::shared_ptr<const OpenFile> file_;
    DeflatedChunks::Place place_;
};

class ChunkFile final : public VirtualFile {
public:
    ChunkFile(std::shared_ptr<const ZarrStoreLayout> layout, const ZarrArray& array, uint64_t index)
        : layout_(std::move(layout)), array_(array), run_(array.grid.run_of(index)) {
        const Variable& v = *array_.variable;
        esize_ = type_size(v.type);
        run_bytes_ = run_.count * esize_;
        big_endian_ = layout_->big_endian();
        pass_through_ = v.source && v.source->type() == v.type;
    }

    uint64_t size() const override { return array_.grid.chunk_bytes(); }

    void read(uint64_t offset, std::span<uint8_t> out) const override {
        check_range(offset, out.size(), size());
        const uint64_t in_run = offset < run_bytes_ ? std::min<uint64_t>(out.size(), run_bytes_ - offset) : 0;
        if (in_run > 0) read_run(offset, out.first(in_run));
        for (uint64_t i = in_run; i < out.size(); ++i) out[i] = array_.fill_stored[(offset + i) % esize_];
    }

    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        check_range(offset, length, size());
        std::vector<ViewPiece> out;
        const uint64_t end = offset + length;
        uint64_t pos = offset;
        if (big_endian_ && pass_through_ && pos < run_bytes_) {  // bytes as a classic file holds them
            const uint64_t run_end = std::min(end, run_bytes_);
            const uint64_t first = (pos + esize_ - 1) / esize_, last = run_end / esize_;  // whole elements
            if (last > first) {
                if (first * esize_ > pos) out.push_back({pos, first * esize_ - pos, std::nullopt, std::nullopt});
                out.push_back({first * esize_, (last - first) * esize_, std::nullopt,
                               SourceRun{array_.variable->source.get(), run_.first + first, last - first}});
                pos = last * esize_;
            }
        }
        if (pos < end) out.push_back({pos, end - pos, std::nullopt, std::nullopt});
        return out;
    }

private:
    // Bytes [offset, offset + out.size()) of the run: its whole elements read, converted, in the chunk's order.
    void read_run(uint64_t offset, std::span<uint8_t> out) const {
        const Variable& v = *array_.variable;
        const uint64_t first = offset / esize_, last = (offset + out.size() + esize_ - 1) / esize_;
        const uint64_t n = last - first;
        std::vector<uint64_t> values((n * esize_ + 7) / 8);  // aligned for typed sources
        if (!v.source) {
            fill_elements(values.data(), array_.fill_stored.data(), esize_, n);
        } else if (pass_through_) {
            v.source->read_linear(run_.first + first, n, big_endian_ ? ByteOrder::Big : ByteOrder::Native, values.data());
        } else {
            const NcType from = v.source->type();
            std::vector<uint64_t> in((n * type_size(from) + 7) / 8);
            v.source->read_linear(run_.first + first, n, ByteOrder::Native, in.data());
            std::vector<uint8_t> fill_native = array_.fill_stored;
            if (big_endian_) swap_from_big_endian(v.type, fill_native.data(), 1);
            convert_elements(from, in.data(), v.type, values.data(), n, fill_native.data());
            if (big_endian_) swap_to_big_endian(v.type, values.data(), n);
        }
        std::memcpy(out.data(), reinterpret_cast<const uint8_t*>(values.data()) + (offset - first * esize_), out.size());
    }

    std::shared_ptr<const ZarrStoreLayout> layout_;  // holds the dataset and the array
    const ZarrArray& array_;
    ZarrGrid::Run run_;
    uint64_t esize_ = 1, run_bytes_ = 0;
    bool big_endian_ = true, pass_through_ = false;
};

}  // namespace

std::shared_ptr<const VirtualFile> zarr_member_file(std::shared_ptr<const ZarrStoreLayout> layout,
                                                    const ZarrMember& member) {
    if (member.kind == ZarrMember::Kind::Metadata) return std::make_shared<MetadataFile>(std::move(layout), member.text);
    if (member.kind == ZarrMember::Kind::Chunk) {
        const ZarrArray& array = *member.array;
        if (array.stored) {
            const auto place = array.stored->place(member.chunk);
            if (!place) throw UsageError("a chunk never written is absent from the .zarr view");
            return std::make_shared<StoredChunkFile>(std::move(layout), *array.stored, *place);
        }
        return std::make_shared<ChunkFile>(std::move(layout), array, member.chunk);
    }
    throw UsageError("a folder of the .zarr view is not a file");
}

}  // namespace ncafs::agg::zarr_view
