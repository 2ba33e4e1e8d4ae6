// The single-file VDS container ("HueDataStore", openvds-notes.md §2.10):
// 32-byte header, a table of named files, one page directory per file and
// index pages of {offset, length, chunk metadata} entries. Every count read
// from the file is bounded before anything is allocated or read: the file
// table by the file's size and by how many files a layout can name, a page
// directory by the file's size (its extent only: it is never read whole),
// an object by the caller's bound. Names are checked for repeats in
// O(n log n). FormatError names the file, the byte and the reason. Page
// offsets and entries are read lazily by pread; the object stays immutable
// and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/open_file.hpp"

namespace ncafs::vds {

// "HueDataStore" at offset 0.
bool has_vds_magic(std::span<const uint8_t> first_bytes);

// The most files a container may list: the layout file plus one file per
// channel (at most 1024), LOD (at most 13) and dimension group (35 names).
constexpr uint64_t kMaxContainerFiles = 1 + 1024 * 13 * 35;

struct ContainerFile {
    std::string name;            // e.g. "VolumeDataLayout", "Dimensions_012LOD0"
    uint32_t type = 0;           // FourCC, little-endian: 'JSON', 'VDS ', 'OBJ '
    uint64_t chunk_count = 0;
    uint64_t page_entries = 0;   // entries per index page
    uint64_t metadata_length = 0;  // per-chunk metadata bytes (hash first)
    uint64_t file_metadata_length = 0;
    uint64_t directory = 0;      // offset of the page directory
    bool pages_checked = false;  // every index page offset checked at parse
    std::vector<uint64_t> page_offsets;  // kept when checked at parse (else read per lookup)
    uint64_t pages() const { return chunk_count == 0 ? 0 : (chunk_count - 1) / page_entries + 1; }
};

// One index entry. offset/length 0 when the chunk has no stored object.
struct ChunkEntry {
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t hash = 0;  // first 8 metadata bytes; 0 when not written
};

class Container {
public:
    explicit Container(std::shared_ptr<const OpenFile> file);

    const std::vector<ContainerFile>& files() const { return files_; }
    const ContainerFile* find(std::string_view name) const;  // binary search
    const OpenFile& file() const { return *file_; }
    const std::shared_ptr<const OpenFile>& shared_file() const { return file_; }

    // The file metadata of `f` (at most 4096 bytes, read now).
    std::vector<uint8_t> file_metadata(const ContainerFile& f) const;
    // Checks every index page offset of `f` (streamed: no allocation that
    // grows with the page count), unless the parse did. Called once the
    // layout bounds the count.
    void check_index_pages(const ContainerFile& f) const;
    // The entry of chunk `index` of `f` (index < f.chunk_count; checked).
    ChunkEntry entry(const ContainerFile& f, uint64_t index) const;
    // The stored bytes of an entry; FormatError, before anything is read,
    // when it is longer than max_bytes or runs past the end of the file.
    std::vector<uint8_t> read_object(const ChunkEntry& e, uint64_t max_bytes, const std::string& what) const;

private:
    void parse_file_table(uint64_t offset, uint64_t count, uint64_t name_length);
    ContainerFile parse_file_header(const uint8_t* row, uint64_t at, uint64_t name_length) const;
    void check_unique_names(uint64_t table_offset, uint64_t row_bytes);
    void check_page_offsets(const ContainerFile& f, std::vector<uint64_t>* keep) const;
    void check_small_page_directories();
    uint64_t page_offset(const ContainerFile& f, uint64_t page) const;
    void check_range(uint64_t offset, uint64_t n, const std::string& what) const;
    std::vector<uint8_t> read_bytes(uint64_t offset, uint64_t n, const std::string& what) const;
    [[noreturn]] void fail(uint64_t offset, const std::string& reason) const;

    std::shared_ptr<const OpenFile> file_;
    std::vector<ContainerFile> files_;
    std::vector<uint32_t> by_name_;  // indices into files_, sorted by name
};

}  // namespace ncafs::vds
