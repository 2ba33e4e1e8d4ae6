// Where the time of one netCDF-4 helper goes, when the daemon
// runs with NCAFS_HELPER_TIMING=1 in its environment (a measurement
// switch, docs/performance.md): the zygote, the helper and the asking side
// each mark the moments of their phases on the machine's monotonic clock
// (one clock for every process), the helper sends its marks back with its
// answer, and the asking side writes one line per answer to stderr:
// milliseconds since it asked, for each phase. Off, each mark is one test
// of a flag read once.
#pragma once

#include <chrono>
#include <string>

namespace ncafs::netcdf::helper_timing {

bool enabled();
// Forgets the marks of this process (the zygote, before each request: its
// helper inherits what it marks until the fork).
void restart();
// Records now as the moment of `phase` (a literal), if enabled; at most 16.
void mark(const char* phase);
// The marks of this process, "phase=nanoseconds;..." (for the answer).
std::string marks_text();
// The asking side's line for one answer: the helper's marks (as
// marks_text() wrote them; from a helper, bounded by the answer's decoder)
// relative to `asked`, and `answered`.
void report(const std::string& shown, const std::string& helper_marks, std::chrono::steady_clock::time_point asked,
            std::chrono::steady_clock::time_point answered);

}  // namespace ncafs::netcdf::helper_timing
