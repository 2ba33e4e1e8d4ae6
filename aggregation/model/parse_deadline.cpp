#include "aggregation/model/parse_deadline.hpp"


#include "aggregation/model/error.hpp"
#include "io/test_switch.hpp"

namespace ncafs::agg {

namespace {

thread_local ParseDeadline* innermost = nullptr;

}  // namespace

std::chrono::milliseconds parse_deadline() {
    static const std::chrono::milliseconds deadline = [] {
        const auto ms = test_milliseconds("NCAFS_TEST_PARSE_DEADLINE_MS");
        return ms && ms->count() > 0 ? *ms : std::chrono::milliseconds(60000);
    }();
    return deadline;
}

ParseDeadline::ParseDeadline(std::string file)
    : file_(std::move(file)), end_(std::chrono::steady_clock::now() + parse_deadline()), outer_(innermost) {
    innermost = this;
}

ParseDeadline::~ParseDeadline() { innermost = outer_; }

void check_parse_deadline() {
    ParseDeadline* d = innermost;
    if (!d || ++d->calls_ % 1024 != 0 || std::chrono::steady_clock::now() < d->end_) return;
    throw AggregationError(d->file_, "parse",
                           "took longer than the parse deadline of " + std::to_string(parse_deadline().count()) +
                               " ms; left out");
}

}  // namespace ncafs::agg
