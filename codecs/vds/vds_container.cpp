#include "codecs/vds/vds_container.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/error.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::vds {
namespace {

constexpr uint64_t kHeaderSize = 32;
constexpr uint64_t kFileHeaderSize = 32;
constexpr uint64_t kDirectoryHeader = 16;  // previous offset, count, revision
constexpr uint64_t kEntryFixed = 16;  // int64 offset, int32 length, int32 reserved
constexpr uint64_t kMaxNameLength = 4096;
constexpr uint64_t kMaxMetadataLength = 4096;
// The file table and page directories are read in blocks of this size at most.
constexpr uint64_t kReadBlock = 1u << 20;
// Page offsets checked (and kept, 8 bytes each) while the table is parsed,
// over all files (8 MiB at most, whatever the files claim); the rest wait
// for the layout and are read per lookup.
constexpr uint64_t kPagesCheckedAtParse = 1u << 20;

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

void Container::check_range(uint64_t offset, uint64_t n, const std::string& what) const {
    if (offset > file_->size() || n > file_->size() - offset)
        fail(offset, what + " of " + std::to_string(n) + " bytes runs past the end of the file (" +
                         std::to_string(file_->size()) + " bytes)");
}

std::vector<uint8_t> Container::read_bytes(uint64_t offset, uint64_t n, const std::string& what) const {
    check_range(offset, n, what);
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
    if (count < 0 || static_cast<uint64_t>(count) > kMaxContainerFiles)
        fail(24, "file count " + std::to_string(count) + " out of range 0.." + std::to_string(kMaxContainerFiles));
    if (name_length <= 0 || static_cast<uint64_t>(name_length) > kMaxNameLength)
        fail(28, "file name length " + std::to_string(name_length) + " out of range 1.." + std::to_string(kMaxNameLength));
    parse_file_table(static_cast<uint64_t>(table), static_cast<uint64_t>(count), static_cast<uint64_t>(name_length));
}

void Container::parse_file_table(uint64_t offset, uint64_t count, uint64_t name_length) {
    const uint64_t row = kFileHeaderSize + name_length;
    // count <= kMaxContainerFiles and row <= 4128: the product cannot overflow.
    check_range(offset, count * row, "file table");
    charge_metadata(count, sizeof(files_[0]) + name_length, "container files");
    files_.reserve(count);
    const uint64_t rows_per_block = std::max<uint64_t>(1, kReadBlock / row);
    for (uint64_t first = 0; first < count; first += rows_per_block) {
        const uint64_t n = std::min(rows_per_block, count - first);
        const auto block = read_bytes(offset + first * row, n * row, "file table");
        for (uint64_t i = 0; i < n; ++i)
            files_.push_back(parse_file_header(&block[i * row], offset + (first + i) * row, name_length));
    }
    check_unique_names(offset, row);
    check_small_page_directories();
}

// A damaged index usually shows here, before the layout is parsed, for the
// price of a bounded read; lookups then need no read of the directory.
void Container::check_small_page_directories() {
    uint64_t budget = kPagesCheckedAtParse;
    for (auto& f : files_) {
        if (f.pages() > budget) continue;
        check_page_offsets(f, &f.page_offsets);
        budget -= f.pages();
        f.pages_checked = true;
    }
}

void Container::check_unique_names(uint64_t table_offset, uint64_t row_bytes) {
    by_name_.resize(files_.size());
    for (uint32_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
    std::stable_sort(by_name_.begin(), by_name_.end(),
                     [&](uint32_t a, uint32_t b) { return files_[a].name < files_[b].name; });
    for (size_t k = 1; k < by_name_.size(); ++k)
        if (files_[by_name_[k]].name == files_[by_name_[k - 1]].name)
            fail(table_offset + by_name_[k] * row_bytes, "file '" + files_[by_name_[k]].name + "' listed twice");
}

ContainerFile Container::parse_file_header(const uint8_t* b, uint64_t at, uint64_t name_length) const {
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
    f.file_metadata_length = static_cast<uint64_t>(file_metadata);
    f.directory = static_cast<uint64_t>(directory);
    // The directory's extent only (pages < 2^31): it is read when needed.
    check_range(f.directory, kDirectoryHeader + f.file_metadata_length + f.pages() * 8,
                "page directory of '" + f.name + "'");
    return f;
}

const ContainerFile* Container::find(std::string_view name) const {
    auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                               [&](uint32_t i, std::string_view n) { return files_[i].name < n; });
    return it != by_name_.end() && files_[*it].name == name ? &files_[*it] : nullptr;
}

std::vector<uint8_t> Container::file_metadata(const ContainerFile& f) const {
    return read_bytes(f.directory + kDirectoryHeader, f.file_metadata_length, "file metadata of '" + f.name + "'");
}

uint64_t Container::page_offset(const ContainerFile& f, uint64_t page) const {
    if (f.pages_checked) return f.page_offsets[page];
    const uint64_t where = f.directory + kDirectoryHeader + f.file_metadata_length + page * 8;
    uint8_t b[8];
    file_->pread_exact(b, 8, where);  // inside the extent checked at parse
    const int64_t offset = get_i64(b);
    if (offset < 0) fail(where, "file '" + f.name + "': negative index page offset");
    // page_entries < 2^31, metadata_length <= 4096: a page is < 2^44 bytes.
    const uint64_t page_bytes = f.page_entries * (kEntryFixed + f.metadata_length);
    const auto o = static_cast<uint64_t>(offset);
    if (o != 0 && (o > file_->size() || page_bytes > file_->size() - o))
        fail(where, "file '" + f.name + "': index page " + std::to_string(page) + " at " + std::to_string(o) +
                        " runs past the end of the file");
    return o;
}

void Container::check_index_pages(const ContainerFile& f) const {
    if (!f.pages_checked) check_page_offsets(f, nullptr);
}

void Container::check_page_offsets(const ContainerFile& f, std::vector<uint64_t>* keep) const {
    const uint64_t pages = f.pages();
    const uint64_t base = f.directory + kDirectoryHeader + f.file_metadata_length;
    const uint64_t page_bytes = f.page_entries * (kEntryFixed + f.metadata_length);
    const uint64_t per_block = kReadBlock / 8;
    for (uint64_t first = 0; first < pages; first += per_block) {
        const uint64_t n = std::min(per_block, pages - first);
        const auto block = read_bytes(base + first * 8, n * 8, "page directory of '" + f.name + "'");
        for (uint64_t p = 0; p < n; ++p) {
            const int64_t offset = get_i64(&block[p * 8]);
            const auto o = static_cast<uint64_t>(offset);
            if (offset < 0 || (o != 0 && (o > file_->size() || page_bytes > file_->size() - o)))
                page_offset(f, first + p);  // throws with the reason
            if (keep) keep->push_back(o);
        }
    }
}

ChunkEntry Container::entry(const ContainerFile& f, uint64_t index) const {
    if (index >= f.chunk_count)
        fail(0, "file '" + f.name + "': chunk " + std::to_string(index) + " of " + std::to_string(f.chunk_count));
    const uint64_t page = page_offset(f, index / f.page_entries);
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

std::vector<uint8_t> Container::read_object(const ChunkEntry& e, uint64_t max_bytes, const std::string& what) const {
    if (e.length > max_bytes)
        fail(e.offset, what + ": object of " + std::to_string(e.length) + " bytes, its layout allows at most " +
                           std::to_string(max_bytes));
    return read_bytes(e.offset, e.length, what);
}

}  // namespace ncafs::vds
