// A one-line progress report on stderr ("LABEL:  42%  3.0 MiB of 7.1 MiB
// 1.2 MiB/s"), redrawn at most five times a second and only when stderr is a
// terminal, so piped or logged runs stay quiet. Shared by `ncafs export`
// (bytes) and `ncafs aggregate` (files).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ncafs {

class ProgressMeter {
public:
    enum class Unit { Bytes, Files };
    ProgressMeter(std::string label, Unit unit);
    ~ProgressMeter();  // ends the line if one was drawn
    ProgressMeter(const ProgressMeter&) = delete;
    ProgressMeter& operator=(const ProgressMeter&) = delete;

    bool enabled() const { return enabled_; }
    void update(uint64_t done, uint64_t total);

private:
    std::string amount(double n) const;

    std::string label_;
    Unit unit_;
    bool enabled_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace ncafs
