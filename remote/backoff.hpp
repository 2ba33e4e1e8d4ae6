// When to try a failed request again: exponential backoff with full jitter
// (a random wait between 0 and min(cap, base * 2^attempt)), at most
// max_retries times and never past retry_budget since the first attempt nor
// past the fetch's deadline (an attempt after the wait needs time too).
#pragma once

#include <chrono>
#include <optional>
#include <random>

#include "remote/remote_store.hpp"

namespace ncafs::remote {

class Backoff {
public:
    Backoff(const RemoteConfig& config, std::chrono::steady_clock::time_point deadline);
    // The wait before the next attempt, or nullopt when no attempt is left.
    std::optional<std::chrono::milliseconds> next();
    unsigned attempts() const { return attempt_ + 1; }

private:
    unsigned max_retries_;
    std::chrono::steady_clock::time_point end_;  // no attempt starts after it
    unsigned attempt_ = 0;
    std::minstd_rand random_;
};

}  // namespace ncafs::remote
