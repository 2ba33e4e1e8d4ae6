// Helpers for the aggregation tests: temp dirs, running the generator, and
// small netcdf-c writers/readers (independent of the code under test).
#pragma once

#include <netcdf.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "codecs/netcdf/netcdf_library.hpp"
#include "codecs/types.hpp"

namespace ncafs::test {

inline std::string binary_dir() {
    const char* b = std::getenv("NCAFS_BINARY_DIR");
    return b ? b : std::filesystem::temp_directory_path().string();
}

inline std::string source_dir() {
    const char* s = std::getenv("NCAFS_SOURCE_DIR");
    return s ? s : NCAFS_SOURCE_DIR_FALLBACK;
}

// A fresh directory under the build tree, per process (ctest -j runs each
// test case in its own process, possibly at the same time).
inline std::string fresh_dir(const std::string& name) {
    auto d = std::filesystem::path(binary_dir()) / "tests" / "aggregation" / "work" /
             (name + "." + std::to_string(::getpid()));
    // Removed again when the test process ends.
    static struct Cleanup {
        std::vector<std::filesystem::path> dirs;
        ~Cleanup() {
            std::error_code ec;
            for (const auto& p : dirs) std::filesystem::remove_all(p, ec);
        }
    } cleanup;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    cleanup.dirs.push_back(d);
    return d.string();
}

inline void run_generator(const std::string& out, const std::string& args) {
    std::string cmd = "/usr/bin/python3 " + source_dir() + "/tests/aggregation/generate_aggregation.py " + out + " " + args;
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("generator failed: " + cmd);
}

inline void nc_check(int status, const std::string& what) {
    if (status != NC_NOERR) throw std::runtime_error(what + ": " + nc_strerror(status));
}

// Reads a hyperslab of a variable raw (its own type, native order).
inline std::vector<uint8_t> nc_read(const std::string& path, const std::string& var, const std::vector<size_t>& start,
                                    const std::vector<size_t>& count, NcType* type_out = nullptr) {
    std::lock_guard lock(netcdf_library_mutex());
    int ncid, varid;
    nc_check(nc_open(path.c_str(), NC_NOWRITE, &ncid), path);
    nc_check(nc_inq_varid(ncid, var.c_str(), &varid), var);
    nc_type t;
    nc_check(nc_inq_vartype(ncid, varid, &t), var);
    size_t n = 1;
    for (size_t c : count) n *= c;
    std::vector<uint8_t> out(n * type_size(static_cast<NcType>(t)));
    if (n) nc_check(nc_get_vara(ncid, varid, start.data(), count.data(), out.data()), var);
    nc_close(ncid);
    if (type_out) *type_out = static_cast<NcType>(t);
    return out;
}

inline std::vector<size_t> nc_shape(const std::string& path, const std::string& var) {
    std::lock_guard lock(netcdf_library_mutex());
    int ncid, varid, ndims;
    nc_check(nc_open(path.c_str(), NC_NOWRITE, &ncid), path);
    nc_check(nc_inq_varid(ncid, var.c_str(), &varid), var);
    nc_check(nc_inq_varndims(ncid, varid, &ndims), var);
    std::vector<int> dims(static_cast<size_t>(ndims));
    nc_check(nc_inq_vardimid(ncid, varid, dims.data()), var);
    std::vector<size_t> shape;
    for (int d : dims) {
        size_t len;
        nc_check(nc_inq_dimlen(ncid, d, &len), "dim");
        shape.push_back(len);
    }
    nc_close(ncid);
    return shape;
}

// A tiny netCDF writer for hand-made test files.
struct NcVarSpec {
    std::string name;
    nc_type type = NC_FLOAT;
    std::vector<std::string> dims;
    std::map<std::string, std::string> text_attributes;
    std::vector<double> values;  // written with nc_put_var_double when not empty
};

inline void nc_write(const std::string& path, const std::vector<std::pair<std::string, size_t>>& dims,
                     const std::vector<NcVarSpec>& vars, int mode = NC_CLOBBER | NC_64BIT_DATA) {
    std::lock_guard lock(netcdf_library_mutex());
    int ncid;
    nc_check(nc_create(path.c_str(), mode, &ncid), path);
    std::map<std::string, int> dimid;
    for (const auto& [name, len] : dims) nc_check(nc_def_dim(ncid, name.c_str(), len, &dimid[name]), name);
    std::vector<int> varids;
    for (const auto& v : vars) {
        std::vector<int> ids;
        for (const auto& d : v.dims) ids.push_back(dimid.at(d));
        int varid;
        nc_check(nc_def_var(ncid, v.name.c_str(), v.type, static_cast<int>(ids.size()), ids.data(), &varid), v.name);
        for (const auto& [an, av] : v.text_attributes)
            nc_check(nc_put_att_text(ncid, varid, an.c_str(), av.size(), av.data()), an);
        varids.push_back(varid);
    }
    nc_check(nc_enddef(ncid), "enddef");
    for (size_t i = 0; i < vars.size(); ++i)
        if (!vars[i].values.empty()) nc_check(nc_put_var_double(ncid, varids[i], vars[i].values.data()), vars[i].name);
    nc_close(ncid);
}

}  // namespace ncafs::test
