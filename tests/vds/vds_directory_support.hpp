// Directory-form volumes for the VDS tests (openvds-notes.md §2.9): a
// fixture container rewritten as VolumeDataLayout, LayerStatus,
// <layer>/<chunk> and <layer>/ChunkMetadata/<page> by the independent walker
// of vds_test_support, and a temporary folder that removes itself.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace vds_test {

namespace fsys = std::filesystem;

void write_file(const fsys::path& p, const void* data, size_t n);
// Rewrites a container as a directory; returns LayerStatus for tweaking.
nlohmann::json to_directory(const std::string& container, const fsys::path& dir, uint64_t page_size = 4);
nlohmann::json& layer_status(nlohmann::json& status, const std::string& name);
void write_status(const fsys::path& dir, const nlohmann::json& status);

struct TempDir {
    fsys::path path;
    TempDir();
    ~TempDir();
};

}  // namespace vds_test
