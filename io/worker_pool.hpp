// WorkerPool: threads kept for the parallel parts of reads (the partitions
// of one read side by side, partitions opened ahead, remote objects fetched
// together), so that no request starts threads of its own. A parallel_for
// queues helpers in a bounded queue and works through the indices itself
// too: when every pool thread is busy (or the queue is full, or the pool
// stopped) the caller does all the work alone, so a job that runs its own
// parallel_for on a pool thread can never wait for a thread that will not
// come.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "io/mutex.hpp"

namespace ncafs {

class WorkerPool {
public:
    static constexpr size_t kThreads = 16;      // enough for 16 remote round trips at once
    static constexpr size_t kQueueBound = 256;  // helper jobs waiting; beyond, callers work alone

    explicit WorkerPool(size_t threads = kThreads, size_t queue_bound = kQueueBound);
    ~WorkerPool() { stop(); }
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // f(index, worker) for every index < n, on the caller (worker 0) and up
    // to width - 1 pool threads (workers 1.. width - 1: for per-worker
    // scratch); returns when every call ended. Rethrows the failure of the
    // lowest index that failed; indices after a failure may be skipped.
    void parallel_for(size_t n, size_t width, const std::function<void(size_t index, size_t worker)>& f);

    // Queues job to run on a pool thread (work in the background); false,
    // nothing queued, when the queue is full or the pool stopped. `drop`
    // runs instead when the pool stops before the job started.
    bool post(std::function<void()> job, std::function<void()> drop = {});

    // Lets running jobs end, drops queued ones, joins the threads; later
    // parallel_for calls run on their caller alone. Idempotent.
    void stop();
    // Threads running now (0 once stopped; started lazily by parallel_for).
    size_t threads() const;

    // The process-wide pool (reads of views, export, aggregation reads).
    static WorkerPool& shared();

private:
    struct Job {
        std::function<void()> run, drop;
    };
    void start_locked() NCAFS_REQUIRES(mutex_);
    void loop();

    const size_t wanted_threads_;
    const size_t queue_bound_;
    mutable Mutex mutex_;
    std::condition_variable ready_;
    std::deque<Job> queue_ NCAFS_GUARDED_BY(mutex_);
    std::vector<std::thread> threads_ NCAFS_GUARDED_BY(mutex_);
    bool stopped_ NCAFS_GUARDED_BY(mutex_) = false;
};

}  // namespace ncafs
