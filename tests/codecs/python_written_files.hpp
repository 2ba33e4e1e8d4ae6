// A scratch folder filled at test time by a Python script (h5py,
// netCDF4-python): the independent writer of the netCDF-4 / HDF5 tests.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

namespace ncafs::test {

// Makes TMPDIR/prefix-XXXXXX, writes `script` there and runs it with
// /usr/bin/python3, the folder as argv[1]; the folder, or nullopt when any
// step fails.
inline std::optional<std::string> write_with_python(const char* script, const std::string& prefix) {
    std::string folder = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(folder.data()) == nullptr) return std::nullopt;
    const std::string writer = folder + "/write.py";
    FILE* f = std::fopen(writer.c_str(), "w");
    if (!f) return std::nullopt;
    std::fputs(script, f);
    std::fclose(f);
    if (std::system(("/usr/bin/python3 " + writer + " " + folder).c_str()) != 0) return std::nullopt;
    return folder;
}

}  // namespace ncafs::test
