#include "codecs/vds/vds_container.hpp"

#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::vds {
namespace {

constexpr uint64_t kHeaderSize = 32;
constexpr uint64_t kFileHeaderSize = 32;
constexpr uint64_t kEntryFixed = 16;  // int64 offset, int32 length, int32 reserved
constexpr uint64_t kMaxNameLength = 4096;
constexpr uint64_t kMaxMetadataLength = 4096;

int32_t get_i32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
int64_t get_i64(const uint8_t* p) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

}  // namespace

bool has_vds_magic(std::span<const uint8_t> b) {
    return b.size() >= 12 && std::memcmp(b.data(), "HueDataStore", 12) == 0;
}

void Container::fail(uint64_t offset, const std::string& reason) const {
    throw FormatError(file_->path(), offset, "VDS container: " + reason);
}

std::vector<uint8_t> Container::read_bytes(uint64_t offset, uint64_t n, const char* what) const {
    if (offset > file_->size() || n > file_->size() - offset)
        fail(offset, std::string(what) + " of " + std::to_string(n) + " bytes runs past the end of the file (" +
                         std::to_string(file_->size()) + " bytes)");
    std::vector<uint8_t> b(n);
    if (n) file_->pread_exact(b.data(), n, offset);
    return b;
}

Container::Container(std::shared_ptr<const OpenFile> file) : file_(std::move(file)) {
    auto h = read_bytes(0, kHeaderSize, "header");
    if (!has_vds_magic(h)) fail(0, "no HueDataStore magic");
    const int32_t version = get_i32(&h[12]);
    if (version != 0x00010000) fail(12, "unsupported version " + std::to_string(version));
    const int64_t table = get_i64(&h[16]);
    const int32_t count = get_i32(&h[24]), name_length = get_i32(&h[28]);
    if (table < 0) fail(16, "negative file table offset");
    if (count < 0) fail(24, "negative file count");
    if (name_length <= 0 || static_cast<uint64_t>(name_length) > kMaxNameLength)
        fail(28, "file name length " + std::to_string(name_length) + " out of range 1.." + std::to_string(kMaxNameLength));
    parse_file_table(static_cast<uint64_t>(table), static_cast<uint64_t>(count), static_cast<uint64_t>(name_length));
}

void Container::parse_file_table(uint64_t offset, uint64_t count, uint64_t name_length) {
    const uint64_t row = kFileHeaderSize + name_length;
    // count <= 2^31 and row <= 4128: the product cannot overflow.
    read_bytes(offset, count * row, "file table");  // bounds check only
    files_.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
        ContainerFile f = parse_file_header(offset + i * row, name_length);
        if (find(f.name)) fail(offset + i * row, "file '" + f.name + "' listed twice");
        files_.push_back(std::move(f));
    }
}

ContainerFile Container::parse_file_header(uint64_t at, uint64_t name_length) const {
    auto b = read_bytes(at, kFileHeaderSize + name_length, "file header");
    const int64_t directory = get_i64(&b[0]);
    const int32_t chunks = get_i32(&b[8]), entries = get_i32(&b[16]);
    const int32_t metadata = get_i32(&b[24]), file_metadata = get_i32(&b[28]);
    ContainerFile f;
    const char* name = reinterpret_cast<const char*>(&b[kFileHeaderSize]);
    f.name.assign(name, strnlen(name, name_length));
    f.type = static_cast<uint32_t>(get_i32(&b[20]));
    if (directory < 0 || chunks < 0 || entries < 0 || metadata < 0 || file_metadata < 0)
        fail(at, "file '" + f.name + "' has a negative offset, count or length");
    if (chunks > 0 && entries == 0) fail(at + 16, "file '" + f.name + "' has chunks but 0 entries per index page");
    if (static_cast<uint64_t>(metadata) > kMaxMetadataLength || static_cast<uint64_t>(file_metadata) > kMaxMetadataLength)
        fail(at + 24, "file '" + f.name + "' metadata length out of range");
    f.chunk_count = static_cast<uint64_t>(chunks);
    f.page_entries = static_cast<uint64_t>(entries);
    f.metadata_length = static_cast<uint64_t>(metadata);
    parse_page_directory(f, static_cast<uint64_t>(directory), static_cast<uint64_t>(file_metadata));
    return f;
}

void Container::parse_page_directory(ContainerFile& f, uint64_t at, uint64_t metadata_bytes) const {
    const uint64_t pages = f.chunk_count == 0 ? 0 : (f.chunk_count - 1) / f.page_entries + 1;
    auto b = read_bytes(at, 16 + metadata_bytes + pages * 8, "page directory");
    f.file_metadata.assign(b.begin() + 16, b.begin() + 16 + static_cast<ptrdiff_t>(metadata_bytes));
    // page_entries < 2^31, metadata_length <= 4096: a page is < 2^44 bytes.
    const uint64_t page_bytes = f.page_entries * (kEntryFixed + f.metadata_length);
    for (uint64_t p = 0; p < pages; ++p) {
        const uint64_t where = at + 16 + metadata_bytes + p * 8;
        const int64_t page = get_i64(&b[16 + metadata_bytes + p * 8]);
        if (page < 0) fail(where, "file '" + f.name + "': negative index page offset");
        const auto offset = static_cast<uint64_t>(page);
        if (offset != 0 && (offset > file_->size() || page_bytes > file_->size() - offset))
            fail(where, "file '" + f.name + "': index page " + std::to_string(p) + " at " + std::to_string(offset) +
                            " runs past the end of the file");
        f.page_offsets.push_back(offset);
    }
}

const ContainerFile* Container::find(std::string_view name) const {
    for (const auto& f : files_)
        if (f.name == name) return &f;
    return nullptr;
}

ChunkEntry Container::entry(const ContainerFile& f, uint64_t index) const {
    if (index >= f.chunk_count)
        fail(0, "file '" + f.name + "': chunk " + std::to_string(index) + " of " + std::to_string(f.chunk_count));
    const uint64_t page = f.page_offsets[index / f.page_entries];
    if (page == 0) return {};  // page never written: every chunk in it is unwritten
    const uint64_t row = kEntryFixed + f.metadata_length;
    const uint64_t at = page + (index % f.page_entries) * row;
    auto b = read_bytes(at, row, "index entry");
    const int64_t offset = get_i64(&b[0]);
    const int32_t length = get_i32(&b[8]);
    if (offset < 0 || length < 0) fail(at, "file '" + f.name + "': negative chunk offset or length");
    ChunkEntry e{static_cast<uint64_t>(offset), static_cast<uint64_t>(length), 0};
    if (f.metadata_length >= 8) std::memcpy(&e.hash, &b[kEntryFixed], 8);
    // offset/length are checked when the object is read: constant and
    // NoValue chunks never are, whatever their entry says (as OpenVDS).
    return e;
}

std::vector<uint8_t> Container::read_object(const ChunkEntry& e) const { return read_bytes(e.offset, e.length, "object"); }

}  // namespace ncafs::vds
