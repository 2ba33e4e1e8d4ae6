#include "fs/partition_sweeps.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "io/lru_cache.hpp"
#include "io/worker_pool.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

namespace {
constexpr std::chrono::milliseconds kPatience{250};  // how long an open waits for a running sweep
}  // namespace

struct PartitionSweeps::State {
    struct Result {
        uint64_t generation = 0;
        std::optional<std::string> absent;
    };
    explicit State(size_t capacity) : results(capacity), running(capacity) {}
    Mutex mutex;
    std::condition_variable answered;  // a background sweep kept its result
    LruCache<FileKey, Result, CacheKeyHash> results NCAFS_GUARDED_BY(mutex);
    LruCache<FileKey, uint64_t, CacheKeyHash> running NCAFS_GUARDED_BY(mutex);  // generation being swept in the background

    void keep(const FileKey& key, uint64_t generation, std::optional<std::string> absent) {
        {
            MutexLock lock(mutex);
            running.erase_if([&](const FileKey& k, const uint64_t& g) { return k == key && g == generation; });
            if (auto before = results.get(key); !before || before->generation <= generation)
                results.put(key, Result{generation, std::move(absent)});
        }
        answered.notify_all();
    }
    // The answer for key in this generation, waiting for a background sweep
    // at most `patience`; nullopt when it is not known by then.
    std::optional<Result> answer(const FileKey& key, uint64_t generation, std::chrono::milliseconds patience) {
        const auto deadline = std::chrono::steady_clock::now() + patience;
        MutexLock lock(mutex);
        for (bool in_time = true;; in_time = lock.wait_until(answered, deadline)) {
            if (auto r = results.get(key); r && r->generation == generation) return r;
            if (!in_time) return std::nullopt;  // looked once more when the time ran out
        }
    }
};

PartitionSweeps::PartitionSweeps(size_t capacity) : state_(std::make_shared<State>(capacity == 0 ? 1 : capacity)) {}

PartitionSweeps::Answer PartitionSweeps::ask(const FileKey& key, uint64_t generation,
                                             std::shared_ptr<const std::vector<std::string>> files,
                                             const Sweep& sweep, const Found& found) {
    {
        MutexLock lock(state_->mutex);
        if (auto known = state_->results.get(key); known && known->generation == generation)
            return Answer{true, known->absent};
        if (files->size() > kSweepAtOpen + 1) {
            if (auto running = state_->running.get(key); running && *running == generation) {
                lock.unlock();
                if (auto known = state_->answer(key, generation, kPatience)) return Answer{true, known->absent};
                return Answer{false, std::nullopt};
            }
            state_->running.put(key, generation);
        }
    }
    if (files->size() <= kSweepAtOpen + 1) {
        auto absent = sweep(std::span<const std::string>(*files).subspan(1));
        state_->keep(key, generation, absent);
        return Answer{true, std::move(absent)};
    }
    auto job = [state = state_, key, generation, files, sweep, found] {
        auto absent = sweep(std::span<const std::string>(*files).subspan(1));
        if (absent && found) found(*absent);
        state->keep(key, generation, std::move(absent));
    };
    if (!WorkerPool::shared().post(std::move(job))) {
        // No thread for it now: the next open asks again.
        MutexLock lock(state_->mutex);
        state_->running.erase_if([&](const FileKey& k, const uint64_t& g) { return k == key && g == generation; });
        return Answer{false, std::nullopt};
    }
    // A sweep of some hundred thousand files ends within this: its answer
    // decides the open as before (the page cache kept); a longer one does not
    // hold the open up.
    if (auto known = state_->answer(key, generation, kPatience)) return Answer{true, known->absent};
    return Answer{false, std::nullopt};
}

}  // namespace ncafs::fs
