// What a netCDF-4 helper process (netcdf_helpers.hpp) may do once it is
// confined, before it reads a byte of the file it was sent: read that one
// file (a Landlock rule on its descriptor, so that HDF5 can open its
// /proc/self/fd name) and nothing else on any file system; no TCP, no
// signals to or abstract sockets of processes outside it (Landlock ABI 4
// and 6, where the kernel has them); no socket, exec, ptrace or kill system
// calls (a seccomp filter); no capability but reading (CAP_DAC_READ_SEARCH,
// for the one file); CPU time, memory, file size and core dumps limited.
#pragma once

#include <string>

namespace ncafs::netcdf {

struct HelperLimits {
    unsigned cpu_seconds;        // RLIMIT_CPU (the deadline kills it sooner)
    unsigned long memory_bytes;  // RLIMIT_AS (not under AddressSanitizer: its shadow needs terabytes)
};

// Confines the calling process (single-threaded, a fresh fork) as above.
// Returns "" or what could not be applied (the kernel has no Landlock...),
// for the answer's diagnostic.
std::string confine_helper(int file_fd, const HelperLimits& limits);

// Confines the zygote that forks the helpers (single-threaded, before its
// first request): no capability but CAP_DAC_READ_SEARCH (its helpers'),
// no new privileges, the helpers' system-call filter less fork and kill
// (it forks helpers and kills the ones past their deadline). It cannot take
// Landlock: a domain of its own would bind every helper's, which read one
// file each. Returns "" or what could not be applied.
std::string confine_zygote();

}  // namespace ncafs::netcdf
