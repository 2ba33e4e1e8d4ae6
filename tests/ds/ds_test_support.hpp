// Helpers shared by the ds tests: scratch directory, commands, file bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/virtual_file.hpp"

namespace ncafs::ds_test {

std::string source_dir();                 // NCAFS_SOURCE_DIR
std::string scratch_dir(const std::string& name);  // fresh directory under the build tree
int run(const std::string& command);      // std::system exit status
std::vector<uint8_t> file_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
// All bytes of a virtual file, read in ranges of varied sizes (random access).
std::vector<uint8_t> read_all(const VirtualFile& f);
std::string describe_difference(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& expected);

}  // namespace ncafs::ds_test
