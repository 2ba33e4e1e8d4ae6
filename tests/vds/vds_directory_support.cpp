#include "tests/vds/vds_directory_support.hpp"

#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "tests/vds/vds_test_support.hpp"

namespace vds_test {

void write_file(const fsys::path& p, const void* data, size_t n) {
    fsys::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

// Rewrites a container as a directory; returns LayerStatus for tweaking.
nlohmann::json to_directory(const std::string& container, const fsys::path& dir, uint64_t page_size) {
    const auto b = read_bytes(container);
    nlohmann::json status = nlohmann::json::array();
    for (const auto& r : walk(b)) {
        const auto chunks = static_cast<uint64_t>(get<int32_t>(b, r.header_at + 8));
        const auto entries = static_cast<uint64_t>(get<int32_t>(b, r.header_at + 16));
        auto entry_at = [&](uint64_t c) {
            const auto page = static_cast<uint64_t>(get<int64_t>(b, r.directory + 16 + static_cast<uint64_t>(r.file_metadata_length) + (c / entries) * 8));
            return page + (c % entries) * (16 + static_cast<uint64_t>(r.metadata_length));
        };
        if (r.name == "VolumeDataLayout") {
            const uint64_t e = entry_at(0);
            write_file(dir / r.name, &b[static_cast<size_t>(get<int64_t>(b, e))], static_cast<size_t>(get<int32_t>(b, e + 8)));
            continue;
        }
        std::vector<uint8_t> pages((chunks + page_size - 1) / page_size * page_size * 8, 0);
        for (uint64_t c = 0; c < chunks; ++c) {
            const uint64_t e = entry_at(c);
            std::memcpy(&pages[c * 8], &b[e + 16], 8);
            if (const auto len = get<int32_t>(b, e + 8))
                write_file(dir / r.name / std::to_string(c), &b[static_cast<size_t>(get<int64_t>(b, e))], static_cast<size_t>(len));
        }
        for (uint64_t p = 0; p * page_size < chunks; ++p)
            write_file(dir / r.name / "ChunkMetadata" / std::to_string(p), &pages[p * page_size * 8], page_size * 8);
        static const char* names[] = {"None", "Wavelet", "RLE", "Zip"};
        std::vector<int> directory;
        for (uint64_t p = 0; p * page_size < chunks; ++p) directory.push_back(static_cast<int>(p));
        status.push_back({{"layerName", r.name}, {"compressionMethod", names[get<int32_t>(b, r.directory + 16)]},
                          {"chunkCount", chunks}, {"chunkMetadataPageSize", page_size}, {"chunkMetadataByteSize", 8},
                          {"hasChunkMetadataPages", true}, {"pageDirectory", directory}, {"produceStatus", "Normal"}});
    }
    const std::string text = status.dump(4);
    write_file(dir / "LayerStatus", text.data(), text.size());
    return status;
}

nlohmann::json& layer_status(nlohmann::json& status, const std::string& name) {
    for (auto& o : status)
        if (o["layerName"] == name) return o;
    throw std::runtime_error("no layer " + name);
}

void write_status(const fsys::path& dir, const nlohmann::json& status) {
    const std::string text = status.dump();
    write_file(dir / "LayerStatus", text.data(), text.size());
}

TempDir::TempDir() {
    char t[] = "/tmp/vds-dir-XXXXXX";
    path = ::mkdtemp(t);
}

TempDir::~TempDir() { fsys::remove_all(path); }

}  // namespace vds_test
