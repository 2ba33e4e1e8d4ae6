// The single-file VDS container ("HueDataStore", openvds-notes.md §2.10):
// 32-byte header, a table of named files, one page directory per file and
// index pages of {offset, length, chunk metadata} entries. Parsing checks
// every offset, count and length against the bytes present (overflow-checked)
// and throws FormatError naming the file, the byte and the reason. Entries are
// read lazily by pread; the object stays immutable and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codecs/open_file.hpp"

namespace ncafs::vds {

// "HueDataStore" at offset 0.
bool has_vds_magic(std::span<const uint8_t> first_bytes);

struct ContainerFile {
    std::string name;            // e.g. "VolumeDataLayout", "Dimensions_012LOD0"
    uint32_t type = 0;           // FourCC, little-endian: 'JSON', 'VDS ', 'OBJ '
    uint64_t chunk_count = 0;
    uint64_t page_entries = 0;   // entries per index page
    uint64_t metadata_length = 0;  // per-chunk metadata bytes (hash first)
    std::vector<uint8_t> file_metadata;
    std::vector<uint64_t> page_offsets;  // 0 = page never written
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
    const ContainerFile* find(std::string_view name) const;
    const OpenFile& file() const { return *file_; }
    const std::shared_ptr<const OpenFile>& shared_file() const { return file_; }

    // The entry of chunk `index` of `f` (index < f.chunk_count; checked).
    ChunkEntry entry(const ContainerFile& f, uint64_t index) const;
    // The stored bytes of an entry; FormatError when they run past the end.
    std::vector<uint8_t> read_object(const ChunkEntry& e) const;

private:
    void parse_file_table(uint64_t offset, uint64_t count, uint64_t name_length);
    ContainerFile parse_file_header(uint64_t at, uint64_t name_length) const;
    void parse_page_directory(ContainerFile& f, uint64_t at, uint64_t metadata_bytes) const;
    std::vector<uint8_t> read_bytes(uint64_t offset, uint64_t n, const char* what) const;
    [[noreturn]] void fail(uint64_t offset, const std::string& reason) const;

    std::shared_ptr<const OpenFile> file_;
    std::vector<ContainerFile> files_;
};

}  // namespace ncafs::vds
