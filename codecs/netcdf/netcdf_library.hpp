// netcdf-c is not thread-safe (no internal locking in 4.9.0 for the classic
// or HDF5 dispatch layers). Every call into netcdf-c anywhere in ncafs holds
// this one process-wide mutex, for as short as possible.
#pragma once

#include <mutex>

namespace ncafs {

std::mutex& netcdf_library_mutex();

}  // namespace ncafs
