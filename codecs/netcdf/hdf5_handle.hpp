// An HDF5 identifier closed with its own close function when it goes out
// of scope (H5Fclose, H5Dclose, H5Pclose...). Callers hold the library
// lock (netcdf_library.hpp) while the handle lives: HDF5 is called beside
// netcdf-c, which is not thread-safe.
#pragma once

#include <hdf5.h>

#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::netcdf {

class Hid {
public:
    Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    ~Hid() NCAFS_REQUIRES(library_mutex) {
        if (id_ >= 0) close_(id_);
    }
    Hid(const Hid&) = delete;
    Hid& operator=(const Hid&) = delete;
    operator hid_t() const { return id_; }
    bool ok() const { return id_ >= 0; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

}  // namespace ncafs::netcdf
