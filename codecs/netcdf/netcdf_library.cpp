#include "codecs/netcdf/netcdf_library.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "codecs/netcdf/hdf5_indirection.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_helpers.hpp"

namespace ncafs {

constinit LibraryMutex library_mutex;

namespace {

// HDF5 keeps its error stack, and the automatic printing of it, per thread
// (thread-safe build): netcdf-c switches printing off only in the thread
// that initialised it. Every other thread prints "HDF5-DIAG" stacks for
// errors netcdf-c expects and handles (e.g. probing _QuantizeBitGroomNumberOfSignificantDigits).
// Before anyone opens a file with netcdf-c, HDF5 follows no external link
// (codecs/netcdf/hdf5_indirection.hpp).
void first_use_on_this_thread() NCAFS_REQUIRES(library_mutex) {
    thread_local bool silenced = false;
    if (!silenced) H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr), silenced = true;
    static bool links_refused = false;  // guarded by the mutex
    if (!links_refused) netcdf::install_external_link_refusal(), links_refused = true;
}

bool library_allowed_here = false;  // set once, in the zygote, before any thread

void refuse_if_forbidden() {
    if (library_allowed_here || !netcdf::netcdf_helpers_started()) return;
    const char* forbid = std::getenv("NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON");
    if (!forbid || std::strcmp(forbid, "1") != 0) return;
    std::fputs("ncafs: NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON: netcdf-c or HDF5 called in the daemon\n", stderr);
    std::abort();
}

}  // namespace

void allow_library_in_this_process() { library_allowed_here = true; }

void LibraryMutex::lock() NCAFS_NO_THREAD_SAFETY_ANALYSIS {
    refuse_if_forbidden();
    mutex_.lock();
    first_use_on_this_thread();
}

void LibraryMutex::unlock() NCAFS_NO_THREAD_SAFETY_ANALYSIS { mutex_.unlock(); }

}  // namespace ncafs
