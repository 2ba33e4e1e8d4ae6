// The gateway's lock. netcdf-c is not thread-safe (no internal locking in
// 4.9.0 for the classic or HDF5 dispatch layers), and HDF5 is called beside
// it: every call into either, anywhere in ncafs, holds this one process-wide
// mutex, for as short as possible. The calls are declared to require it
// (codecs/netcdf/library_calls.hpp), so that with clang (-Wthread-safety,
// an error in ncafs' builds) a call without the lock does not compile.
// The first lock on a thread also switches off HDF5's automatic error
// printing for that thread (HDF5 keeps it per thread).
#pragma once

#include <mutex>

#include "io/thread_safety.hpp"

namespace ncafs {

class NCAFS_CAPABILITY("mutex") LibraryMutex {
public:
    constexpr LibraryMutex() = default;
    void lock() NCAFS_ACQUIRE();
    void unlock() NCAFS_RELEASE();
    // Tells the analysis the caller holds it (a callback run under the lock
    // by a function the analysis cannot see through, e.g. a std::function).
    void assert_held() const NCAFS_ASSERT_CAPABILITY(this) {}

private:
    std::mutex mutex_;
};

// The one library mutex (constant-initialised: usable from any static initialiser).
extern LibraryMutex library_mutex;

// Holds library_mutex for its scope.
class NCAFS_SCOPED_CAPABILITY LibraryLock {
public:
    LibraryLock() NCAFS_ACQUIRE(library_mutex) { library_mutex.lock(); }
    ~LibraryLock() NCAFS_RELEASE() { library_mutex.unlock(); }
    LibraryLock(const LibraryLock&) = delete;
    LibraryLock& operator=(const LibraryLock&) = delete;
};

// Marks this process as one where the libraries read users' files (the
// helpers' zygote, inherited by its helpers). With the test-only
// NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON=1 (tests/README.md), a process that
// started the helpers and is not one aborts at its first library lock:
// proof that the daemon leaves every netCDF-4 file to its helpers.
void allow_library_in_this_process();

// library_mutex, for code that locks it with std::lock_guard (tests).
inline LibraryMutex& netcdf_library_mutex() { return library_mutex; }

}  // namespace ncafs
