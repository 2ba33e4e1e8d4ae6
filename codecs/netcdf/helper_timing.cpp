#include "codecs/netcdf/helper_timing.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace ncafs::netcdf::helper_timing {

namespace {

struct Mark {
    const char* phase;
    long long nanoseconds;
};
// Written by one thread only: the zygote's and each helper's only thread.
Mark marks[16];
int marked = 0;
bool in_helpers = false;  // set by the zygote's first restart(): the daemon's threads never mark

long long now_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);  // what steady_clock reads, in every process
    return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

long long ns_of(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

bool enabled() {
    static const bool on = [] {
        const char* v = std::getenv("NCAFS_HELPER_TIMING");
        return v && std::strcmp(v, "1") == 0;
    }();
    return on;
}

void restart() {
    in_helpers = true;
    marked = 0;
}

void mark(const char* phase) {
    if (!in_helpers || !enabled() || marked >= 16) return;
    marks[marked++] = Mark{phase, now_ns()};
}

std::string marks_text() {
    std::string text;
    for (int i = 0; i < marked; ++i) text += std::string(marks[i].phase) + "=" + std::to_string(marks[i].nanoseconds) + ";";
    return text;
}

void report(const std::string& shown, const std::string& helper_marks, std::chrono::steady_clock::time_point asked,
            std::chrono::steady_clock::time_point answered) {
    const long long from = ns_of(asked);
    std::string line;
    size_t at = 0;
    for (int marks_read = 0; marks_read < 16 && at < helper_marks.size(); ++marks_read) {  // as many as mark() keeps
        const size_t end = helper_marks.find(';', at), equals = helper_marks.find('=', at);
        if (end == std::string::npos || equals == std::string::npos || equals > end) break;
        // From a helper: any digits at all (from_chars refuses what is not
        // a number in range; then 0), compared as doubles (no overflow).
        long long ns = 0;
        std::from_chars(helper_marks.data() + equals + 1, helper_marks.data() + end, ns);
        char figure[48];
        std::snprintf(figure, sizeof figure, " %.3f", (static_cast<double>(ns) - static_cast<double>(from)) / 1e6);
        std::string phase = helper_marks.substr(at, std::min<size_t>(equals - at, 32));
        std::erase_if(phase, [](char c) { return !std::isalnum(static_cast<unsigned char>(c)) && c != '_'; });
        line += " " + phase + figure;  // a name the log cannot be fooled by (no newline, no space)
        at = end + 1;
    }
    std::fprintf(stderr, "ncafs: helper timing (ms since asked at %.6f s) %s:%s answered %.3f\n",
                 static_cast<double>(from) / 1e9, shown.c_str(), line.c_str(),
                 static_cast<double>(ns_of(answered) - from) / 1e6);
}

}  // namespace ncafs::netcdf::helper_timing
