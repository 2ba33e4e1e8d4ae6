// Helpers for the VDS tests: fixture paths (tests/data/vds), SHA-1 of bytes,
// reading a whole variable, and a tiny independent walker of the container
// (openvds-notes.md §2.10) used to patch fixtures into hostile variants.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"

namespace vds_test {

std::string fixture(const std::string& name);  // absolute path under tests/data/vds
std::vector<uint8_t> read_bytes(const std::string& path);
std::string write_temp(const std::vector<uint8_t>& bytes);  // a new temp file (removed by the caller)
std::string sha1_hex(const void* data, size_t n);
std::vector<uint8_t> read_all(const ncafs::Variable& v);  // native order

// What running `work` once in a forked child cost: its peak resident
// memory (VmHWM of /proc/self/status, which includes what the parent had
// when forking) and wall time, and the text work returned.
struct ChildCost {
    uint64_t peak_bytes = 0;
    double seconds = 0;
    std::string outcome;
};
ChildCost cost_in_child(const std::function<std::string()>& work);

// Where things are in a container's bytes (fixture layout, checked by asserts).
struct FileRow {
    std::string name;
    uint64_t header_at = 0;     // the 32-byte FileHeader
    uint64_t directory = 0;     // page directory offset
    int32_t file_metadata_length = 0;
    int32_t metadata_length = 0;
    uint64_t first_page = 0;    // offset of index page 0
};
std::vector<FileRow> walk(const std::vector<uint8_t>& b);
const FileRow& row(const std::vector<FileRow>& rows, const std::string& name);

template <typename T>
T get(const std::vector<uint8_t>& b, uint64_t at) {
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}
template <typename T>
void put(std::vector<uint8_t>& b, uint64_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof v);
}

}  // namespace vds_test
