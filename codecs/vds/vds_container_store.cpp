// VolumeStore over the single-file container: layers are the container's
// 'VDS ' files, the compression method is the first int32 of a layer's file
// metadata, objects are read by pread from the offsets of the index.
#include <cstring>

#include "codecs/error.hpp"
#include "codecs/vds/vds_container.hpp"
#include "codecs/vds/vds_store.hpp"

namespace ncafs::vds {
namespace {

constexpr uint32_t kTypeJson = 0x4E4F534A;  // "JSON" as a little-endian FourCC
constexpr uint32_t kTypeVds = 0x20534456;   // "VDS "
constexpr uint64_t kMaxLayoutBytes = 16u << 20;

Compression compression_of(const Container& c, const ContainerFile& f) {
    const std::string& path = c.file().path();
    if (f.file_metadata_length < 4) throw FormatError(path, 0, "layer " + f.name + ": no compression method in its file metadata");
    int32_t method;
    std::memcpy(&method, c.file_metadata(f).data(), 4);
    if (method == 0 || method == 2 || method == 3) return static_cast<Compression>(method);
    if (method == 1 || (method >= 4 && method <= 6))
        throw FormatError(path, 0, "layer " + f.name + ": Wavelet compression is not supported");
    throw FormatError(path, 0, "layer " + f.name + ": unknown compression method " + std::to_string(method));
}

class ContainerLayer final : public LayerStore {
public:
    ContainerLayer(std::shared_ptr<const Container> c, const ContainerFile& f)
        : container_(std::move(c)), file_(f), compression_(compression_of(*container_, f)) {
        if (f.chunk_count > 0 && f.metadata_length < 8)
            throw FormatError(container_->file().path(), 0, "layer " + f.name + ": chunk metadata shorter than the 8-byte hash");
    }
    uint64_t chunk_count() const override { return file_.chunk_count; }
    Compression compression() const override { return compression_; }
    uint64_t hash(uint64_t index) const override { return container_->entry(file_, index).hash; }
    StoredObject read(uint64_t index, uint64_t max_bytes) const override {
        const ChunkEntry e = container_->entry(file_, index);
        const std::string what = "layer " + file_.name + " chunk " + std::to_string(index);
        if (e.length == 0)
            throw FormatError(container_->file().path(), e.offset, what + ": data hash but no stored object");
        return {container_->read_object(e, max_bytes, what), container_->file().path(), e.offset};
    }
    void check_index() const override { container_->check_index_pages(file_); }

private:
    std::shared_ptr<const Container> container_;
    const ContainerFile& file_;  // owned by container_
    Compression compression_;
};

class ContainerStore final : public VolumeStore {
public:
    explicit ContainerStore(std::shared_ptr<const OpenFile> file)
        : container_(std::make_shared<const Container>(std::move(file))) {}
    const std::string& path() const override { return container_->file().path(); }
    FileIdentity identity() const override { return container_->file().identity(); }
    std::string layout_text() const override {
        const std::string& p = path();
        const ContainerFile* f = container_->find("VolumeDataLayout");
        if (!f) throw FormatError(p, 0, "VDS container has no VolumeDataLayout");
        if (f->type != kTypeJson) throw FormatError(p, 0, "VolumeDataLayout is not JSON (old VDSObject files are not supported)");
        if (f->chunk_count < 1) throw FormatError(p, 0, "VolumeDataLayout has no chunk");
        const ChunkEntry e = container_->entry(*f, 0);
        if (e.length == 0) throw FormatError(p, e.offset, "VolumeDataLayout is empty");
        const auto bytes = container_->read_object(e, kMaxLayoutBytes, "VolumeDataLayout");
        return std::string(bytes.begin(), bytes.end());
    }
    std::vector<std::string> layer_names() const override {
        std::vector<std::string> names;
        for (const auto& f : container_->files())
            if (f.type == kTypeVds) names.push_back(f.name);
        return names;
    }
    std::shared_ptr<const LayerStore> layer(const std::string& name) const override {
        const ContainerFile* f = container_->find(name);
        if (!f || f->type != kTypeVds) return nullptr;
        return std::make_shared<const ContainerLayer>(container_, *f);
    }

private:
    std::shared_ptr<const Container> container_;
};

}  // namespace

std::shared_ptr<const VolumeStore> open_container_store(const std::string& path) {
    return open_container_store(OpenFile::open(path));
}

std::shared_ptr<const VolumeStore> open_container_store(std::shared_ptr<const OpenFile> file) {
    return std::make_shared<const ContainerStore>(std::move(file));
}

std::vector<uint8_t> read_small_file(const std::string& path, uint64_t max_bytes) {
    return read_small_file(*OpenFile::open(path), max_bytes);
}

std::vector<uint8_t> read_small_file(const OpenFile& f, uint64_t max_bytes) {
    if (f.size() > max_bytes)
        throw FormatError(f.path(), 0,
                          "file of " + std::to_string(f.size()) + " bytes exceeds the limit of " + std::to_string(max_bytes));
    std::vector<uint8_t> b(f.size());
    if (!b.empty()) f.pread_exact(b.data(), b.size(), 0);
    return b;
}

}  // namespace ncafs::vds
