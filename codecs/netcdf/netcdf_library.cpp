#include "codecs/netcdf/netcdf_library.hpp"

#include <hdf5.h>

#include "codecs/netcdf/hdf5_indirection.hpp"

namespace ncafs {

using netcdf::install_external_link_refusal;

namespace {

// HDF5 keeps its error stack, and the automatic printing of it, per thread
// (thread-safe build): netcdf-c switches printing off only in the thread
// that initialised it. Every other thread prints "HDF5-DIAG" stacks for
// errors netcdf-c expects and handles (e.g. probing _QuantizeBitGroomNumberOfSignificantDigits).
void silence_hdf5_errors_in_this_thread(std::mutex& m) {
    std::lock_guard lock(m);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// Before anyone opens a file with netcdf-c: HDF5 follows no external link
// (codecs/netcdf/hdf5_indirection.hpp).
void refuse_external_links(std::mutex& m) {
    std::lock_guard lock(m);
    install_external_link_refusal();
}

}  // namespace

std::mutex& netcdf_library_mutex() {
    // Function-local static: constructed on first use, thread-safe since C++11,
    // and usable from other static initialisers.
    static std::mutex m;  // lock order: innermost (only netcdf-c and HDF5 run under it)
    // Every caller asks for the mutex before calling netcdf-c, and cannot hold
    // it yet on its thread's first ask: the right moment to silence HDF5 once.
    thread_local const bool silenced = (silence_hdf5_errors_in_this_thread(m), true);
    (void)silenced;
    static const bool links_refused = (refuse_external_links(m), true);
    (void)links_refused;
    return m;
}

}  // namespace ncafs
