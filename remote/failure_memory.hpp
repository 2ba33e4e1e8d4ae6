// Failed objects, remembered for a short time (RemoteConfig::failure_memory)
// per URL and version with their error: a read of a failing object within
// that time fails at once, with the same error and no request, instead of
// retrying once more for each of the many small reads a library makes.
// Bounded (expired entries go first, then all). Thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>

#include "remote/range_fetcher.hpp"
#include "io/mutex.hpp"

namespace ncafs::remote {

class FailureMemory {
public:
    explicit FailureMemory(std::chrono::milliseconds keep) : keep_(keep) {}

    // version "" stands for the open (the version is not known yet).
    void remember(const std::string& url, const std::string& version, const FetchError& error);
    // The error remembered for url and version, while it is fresh (its
    // reason says since when and for how long), else nullopt.
    std::optional<FetchError> recall(const std::string& url, const std::string& version) const;
    void forget(const std::string& url, const std::string& version);

private:
    using Clock = std::chrono::steady_clock;
    struct Failure {
        std::string reason;
        Verdict kind;
        long status;
        Clock::time_point when;
    };
    static std::string key(const std::string& url, const std::string& version) { return version + '\n' + url; }

    std::chrono::milliseconds keep_;
    mutable Mutex mutex_;  // lock order: a leaf (taken under DatasetCache::mutex_)
    std::unordered_map<std::string, Failure> failures_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::remote
