// How long the daemon's own parse of one aggregation file may take (NCA
// JSON partitions, CF term fragments): a hostile or gigantic file must not
// hold a listing or a stat that waits on it forever. The reader of one file
// opens a ParseDeadline on its thread; the parsers below it call
// check_parse_deadline in their per-partition loops, which throws once the
// innermost deadline of the thread has passed. The parse stops there: the
// file's view is left out with one log line naming the file and the reason.
#pragma once

#include <chrono>
#include <string>

namespace ncafs::agg {

// 60 s, or the test-only NCAFS_TEST_PARSE_DEADLINE_MS (tests/README.md).
std::chrono::milliseconds parse_deadline();

class ParseDeadline {
public:
    explicit ParseDeadline(std::string file);
    ~ParseDeadline();
    ParseDeadline(const ParseDeadline&) = delete;
    ParseDeadline& operator=(const ParseDeadline&) = delete;

private:
    friend void check_parse_deadline();
    std::string file_;
    std::chrono::steady_clock::time_point end_;
    ParseDeadline* outer_;
    unsigned calls_ = 0;
};

// Throws AggregationError naming the file once the thread's innermost
// deadline has passed (the clock is read every 1,024 calls); without one
// (a unit test of a parser) it does nothing.
void check_parse_deadline();

}  // namespace ncafs::agg
