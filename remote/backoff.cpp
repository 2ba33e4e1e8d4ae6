#include "remote/backoff.hpp"

#include <algorithm>

namespace ncafs::remote {

namespace {
constexpr std::chrono::milliseconds kBase{100};
constexpr std::chrono::milliseconds kCap{10000};
constexpr std::chrono::milliseconds kLeastAttempt{200};  // an attempt with less time left is not worth starting
}  // namespace

Backoff::Backoff(const RemoteConfig& config, std::chrono::steady_clock::time_point deadline)
    : max_retries_(config.max_retries),
      end_(std::min(std::chrono::steady_clock::now() + config.retry_budget, deadline - kLeastAttempt)),
      random_(std::random_device{}()) {}

std::optional<std::chrono::milliseconds> Backoff::next() {
    if (attempt_ >= max_retries_) return std::nullopt;
    std::chrono::milliseconds ceiling = std::min<std::chrono::milliseconds>(kCap, kBase * (1ll << std::min(attempt_, 16u)));
    std::uniform_int_distribution<long long> pick(0, ceiling.count());
    std::chrono::milliseconds wait{pick(random_)};
    if (std::chrono::steady_clock::now() + wait > end_) return std::nullopt;
    ++attempt_;
    return wait;
}

}  // namespace ncafs::remote
