// netcdf-c is not thread-safe (no internal locking in 4.9.0 for the classic
// or HDF5 dispatch layers). Every call into netcdf-c anywhere in ncafs holds
// this one process-wide mutex, for as short as possible. The first call of
// netcdf_library_mutex() on a thread also switches off HDF5's automatic
// error printing for that thread (HDF5 keeps it per thread).
#pragma once

#include <mutex>

namespace ncafs {

std::mutex& netcdf_library_mutex();

}  // namespace ncafs
