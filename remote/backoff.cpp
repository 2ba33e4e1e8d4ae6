#include "remote/backoff.hpp"

#include <algorithm>

namespace ncafs::remote {

namespace {
constexpr std::chrono::milliseconds kBase{100};
constexpr std::chrono::milliseconds kCap{10000};
}  // namespace

Backoff::Backoff(const RemoteConfig& config)
    : max_retries_(config.max_retries),
      budget_(config.retry_budget),
      start_(std::chrono::steady_clock::now()),
      random_(std::random_device{}()) {}

std::optional<std::chrono::milliseconds> Backoff::next() {
    if (attempt_ >= max_retries_) return std::nullopt;
    std::chrono::milliseconds ceiling = std::min<std::chrono::milliseconds>(kCap, kBase * (1ll << std::min(attempt_, 16u)));
    std::uniform_int_distribution<long long> pick(0, ceiling.count());
    std::chrono::milliseconds wait{pick(random_)};
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_);
    if (spent + wait > budget_) return std::nullopt;
    ++attempt_;
    return wait;
}

}  // namespace ncafs::remote
