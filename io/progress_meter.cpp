#include "io/progress_meter.hpp"

#include <unistd.h>

#include <cstdio>

namespace ncafs {

ProgressMeter::ProgressMeter(std::string label, Unit unit)
    : label_(std::move(label)), unit_(unit), enabled_(::isatty(2) != 0),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

ProgressMeter::~ProgressMeter() {
    if (drawn_) std::fprintf(stderr, "\n");
}

std::string ProgressMeter::amount(double n) const {
    char buf[32];
    if (unit_ == Unit::Files) {
        std::snprintf(buf, sizeof buf, "%.0f", n);
        return buf;
    }
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (n >= 1024 && u < 4) {
        n /= 1024;
        ++u;
    }
    std::snprintf(buf, sizeof buf, "%.1f %s", n, units[u]);
    return buf;
}

void ProgressMeter::update(uint64_t done, uint64_t total) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(200) && done != total) return;
    last_ = now;
    drawn_ = true;
    double seconds = std::chrono::duration<double>(now - start_).count();
    double rate = seconds > 0 ? double(done) / seconds : 0;
    const char* files = unit_ == Unit::Files ? " files" : "";
    std::fprintf(stderr, "\r%s: %3d%%  %s of %s%s  %s%s/s   ", label_.c_str(),
                 static_cast<int>(total ? 100.0 * double(done) / double(total) : 100), amount(double(done)).c_str(),
                 amount(double(total)).c_str(), files, amount(rate).c_str(), files);
    std::fflush(stderr);
}

}  // namespace ncafs
