#include "codecs/netcdf/netcdf_writer.hpp"

#include "codecs/error.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::netcdf {

namespace {

int create_mode(NetcdfWriter::Format format) {
    switch (format) {
        case NetcdfWriter::Format::Classic64BitOffset: return NC_CLOBBER | NC_64BIT_OFFSET;
        case NetcdfWriter::Format::Cdf5: return NC_CLOBBER | NC_64BIT_DATA;
        case NetcdfWriter::Format::Netcdf4: return NC_CLOBBER | NC_NETCDF4;
    }
    return NC_CLOBBER | NC_NETCDF4;
}

}  // namespace

NetcdfWriter::NetcdfWriter(const std::string& path, const std::string& shown, Format format) : shown_(shown) {
    LibraryLock lock;
    check(nc_create(path.c_str(), create_mode(format), &ncid_), "cannot create");
}

NetcdfWriter::~NetcdfWriter() {
    if (ncid_ < 0) return;
    LibraryLock lock;
    nc_close(ncid_);
}

void NetcdfWriter::check(int status, const std::string& what) const {
    if (status != NC_NOERR) throw SourceError(shown_, what + ": " + nc_strerror(status));
}

int NetcdfWriter::def_dim(const std::string& name, size_t length, bool unlimited) {
    LibraryLock lock;
    int id = -1;
    check(nc_def_dim(ncid_, name.c_str(), unlimited ? NC_UNLIMITED : length, &id), "dimension " + name);
    return id;
}

int NetcdfWriter::def_var(const std::string& name, int type, const std::vector<int>& dimids) {
    LibraryLock lock;
    int id = -1;
    check(nc_def_var(ncid_, name.c_str(), static_cast<nc_type>(type), static_cast<int>(dimids.size()),
                     dimids.empty() ? nullptr : dimids.data(), &id),
          "variable " + name);
    return id;
}

void NetcdfWriter::put_att_text(int varid, const std::string& name, const std::string& text, const std::string& what) {
    LibraryLock lock;
    check(nc_put_att_text(ncid_, varid, name.c_str(), text.size(), text.data()), what);
}

void NetcdfWriter::put_att(int varid, const std::string& name, int type, size_t count, const void* values,
                           const std::string& what) {
    LibraryLock lock;
    check(nc_put_att(ncid_, varid, name.c_str(), static_cast<nc_type>(type), count, values), what);
}

void NetcdfWriter::enddef() {
    LibraryLock lock;
    check(nc_enddef(ncid_), "end of definitions");
}

void NetcdfWriter::put_var(int varid, const void* values, const std::string& what) {
    LibraryLock lock;
    check(nc_put_var(ncid_, varid, values), what);
}

void NetcdfWriter::put_var_longlong(int varid, const long long* values, const std::string& what) {
    LibraryLock lock;
    check(nc_put_var_longlong(ncid_, varid, values), what);
}

void NetcdfWriter::put_var_string(int varid, const char** values, const std::string& what) {
    LibraryLock lock;
    check(nc_put_var_string(ncid_, varid, values), what);
}

void NetcdfWriter::put_var_text(int varid, const char* values, const std::string& what) {
    LibraryLock lock;
    check(nc_put_var_text(ncid_, varid, values), what);
}

void NetcdfWriter::close() {
    LibraryLock lock;
    const int id = ncid_;
    ncid_ = -1;
    check(nc_close(id), "close");
}

}  // namespace ncafs::netcdf
