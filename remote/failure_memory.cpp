#include "remote/failure_memory.hpp"

namespace ncafs::remote {
namespace {
constexpr size_t kMaxRemembered = 10000;
}

void FailureMemory::remember(const std::string& url, const std::string& version, const FetchError& error) {
    if (keep_.count() <= 0) return;
    const Clock::time_point now = Clock::now();
    MutexLock lock(mutex_);
    if (failures_.size() >= kMaxRemembered) {
        std::erase_if(failures_, [&](const auto& entry) { return now - entry.second.when >= keep_; });
        if (failures_.size() >= kMaxRemembered) failures_.clear();
    }
    failures_[key(url, version)] = Failure{error.reason(), error.kind(), error.status(), now};
}

std::optional<FetchError> FailureMemory::recall(const std::string& url, const std::string& version) const {
    const Clock::time_point now = Clock::now();
    MutexLock lock(mutex_);
    auto it = failures_.find(key(url, version));
    if (it == failures_.end() || now - it->second.when >= keep_) return std::nullopt;
    const Failure& f = it->second;
    auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - f.when).count();
    std::string reason = f.reason + " (failed " + std::to_string(ago / 1000) + "." + std::to_string(ago % 1000 / 100) +
                         " s ago; not tried again for " + std::to_string(keep_.count() / 1000) + " s)";
    return FetchError(url, reason, f.kind, f.status);
}

void FailureMemory::forget(const std::string& url, const std::string& version) {
    MutexLock lock(mutex_);
    failures_.erase(key(url, version));
}

}  // namespace ncafs::remote
