// Writing a netCDF file with netcdf-c, for ncafs' own output (`ncafs
// aggregate` writes its CF-1.13 aggregation files so): the gateway's side
// of it, each call under the library lock, each failure a SourceError
// naming the output and what was being written. No user's file is opened.
#pragma once

#include <string>
#include <vector>

namespace ncafs::netcdf {

class NetcdfWriter {
public:
    enum class Format { Classic64BitOffset, Cdf5, Netcdf4 };
    // Creates (clobbers) `path`, in define mode; `shown` names it in messages.
    NetcdfWriter(const std::string& path, const std::string& shown, Format format);
    // Closes the file if close() was not reached (after an error: its bytes are not kept).
    ~NetcdfWriter();
    NetcdfWriter(const NetcdfWriter&) = delete;
    NetcdfWriter& operator=(const NetcdfWriter&) = delete;

    // Define mode. Types are nc_type codes (NC_CHAR, NC_STRING, ...); varid -1 (NC_GLOBAL): global.
    int def_dim(const std::string& name, size_t length, bool unlimited);
    int def_var(const std::string& name, int type, const std::vector<int>& dimids);
    void put_att_text(int varid, const std::string& name, const std::string& text, const std::string& what);
    void put_att(int varid, const std::string& name, int type, size_t count, const void* values, const std::string& what);
    void enddef();
    // Data mode: a whole variable each.
    void put_var(int varid, const void* values, const std::string& what);
    void put_var_longlong(int varid, const long long* values, const std::string& what);
    void put_var_string(int varid, const char** values, const std::string& what);
    void put_var_text(int varid, const char* values, const std::string& what);
    void close();

private:
    void check(int status, const std::string& what) const;
    std::string shown_;
    int ncid_ = -1;
};

}  // namespace ncafs::netcdf
