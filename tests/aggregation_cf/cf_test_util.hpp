// Helpers shared by the CF aggregation tests: whole-variable values as
// doubles, from netcdf-c (the independent side) and from an ArraySource.
#pragma once

#include <gtest/gtest.h>
#include <netcdf.h>

#include <mutex>
#include <string>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::cftest {

// Every value of variable `var` of the netCDF file at `path`, read by netcdf-c.
inline std::vector<double> nc_values(const std::string& path, const std::string& var) {
    std::lock_guard lock(netcdf_library_mutex());
    int ncid = -1, varid = -1, ndims = 0;
    EXPECT_EQ(nc_open(path.c_str(), NC_NOWRITE, &ncid), NC_NOERR) << path;
    EXPECT_EQ(nc_inq_varid(ncid, var.c_str(), &varid), NC_NOERR) << var;
    nc_inq_varndims(ncid, varid, &ndims);
    std::vector<int> dims(static_cast<size_t>(ndims));
    nc_inq_vardimid(ncid, varid, dims.data());
    size_t n = 1;
    for (int d : dims) {
        size_t len = 0;
        nc_inq_dimlen(ncid, d, &len);
        n *= len;
    }
    std::vector<double> v(n);
    EXPECT_EQ(nc_get_var_double(ncid, varid, v.data()), NC_NOERR);
    nc_close(ncid);
    return v;
}

// Every value of s, read through ArraySource::read, as doubles.
inline std::vector<double> read_all(const ArraySource& s) {
    std::vector<uint8_t> raw(s.element_count() * type_size(s.type()));
    std::vector<uint64_t> start(s.shape().size(), 0);
    s.read(start, s.shape(), ByteOrder::Native, raw.data());
    std::vector<double> v(s.element_count());
    for (size_t i = 0; i < v.size(); ++i) v[i] = element_as_double(s.type(), raw.data(), i);
    return v;
}

}  // namespace ncafs::cftest
