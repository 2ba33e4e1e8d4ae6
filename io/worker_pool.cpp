#include "io/worker_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <system_error>


namespace ncafs {

namespace {

// The indices of one parallel_for, shared with its helpers: a helper that
// starts after the caller returned finds no index left and touches nothing else.
struct Indices {
    size_t n = 0;
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    Mutex mutex;
    std::condition_variable done_cv;
    size_t done NCAFS_GUARDED_BY(mutex) = 0;  // indices taken and ended (or given up after a failure)
    std::exception_ptr error NCAFS_GUARDED_BY(mutex);
    size_t error_index NCAFS_GUARDED_BY(mutex) = 0;

    // Takes and runs indices until none is left; returns how many it took.
    void work(const std::function<void(size_t, size_t)>& f, size_t worker) {
        size_t taken = 0;
        for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n; ++taken) {
            if (failed.load(std::memory_order_relaxed)) continue;  // skipped after a failure
            try {
                f(i, worker);
            } catch (...) {
                MutexLock lock(mutex);
                if (!error || i < error_index) error = std::current_exception(), error_index = i;
                failed.store(true, std::memory_order_relaxed);
            }
        }
        if (taken == 0) return;
        MutexLock lock(mutex);
        done += taken;
        if (done == n) done_cv.notify_all();
    }
};

}  // namespace

WorkerPool::WorkerPool(size_t threads, size_t queue_bound) : wanted_threads_(threads), queue_bound_(queue_bound) {}

WorkerPool& WorkerPool::shared() {
    static WorkerPool pool;
    return pool;
}

void WorkerPool::start_locked() {
    try {
        while (threads_.size() < wanted_threads_) threads_.emplace_back([this] { loop(); });
    } catch (const std::system_error&) {
        // No thread to spare (a thread limit): fewer helpers, callers do the rest.
    }
}

bool WorkerPool::post(std::function<void()> job, std::function<void()> drop) {
    {
        MutexLock lock(mutex_);
        if (stopped_ || queue_.size() >= queue_bound_) return false;
        if (threads_.size() < wanted_threads_) start_locked();
        if (threads_.empty()) return false;
        queue_.push_back(Job{std::move(job), std::move(drop)});
    }
    ready_.notify_one();
    return true;
}

void WorkerPool::loop() {
    MutexLock lock(mutex_);
    for (;;) {
        while (!stopped_ && queue_.empty()) lock.wait(ready_);
        if (stopped_) return;
        Job job = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        job.run();  // never throws: parallel_for's helpers keep their failures, posted jobs catch theirs
        lock.lock();
    }
}

void WorkerPool::parallel_for(size_t n, size_t width, const std::function<void(size_t, size_t)>& f) {
    if (n == 0) return;
    auto indices = std::make_shared<Indices>();
    indices->n = n;
    const size_t helpers = std::min(width, n) - std::min<size_t>(1, std::min(width, n));
    for (size_t worker = 1; worker <= helpers; ++worker)
        if (!post([indices, &f, worker] { indices->work(f, worker); })) break;
    indices->work(f, 0);
    std::exception_ptr error;
    {
        // Indices a helper took are still running: f must outlive them.
        MutexLock lock(indices->mutex);
        while (indices->done != n) lock.wait(indices->done_cv);
        error = indices->error;
    }
    if (error) std::rethrow_exception(error);
}

void WorkerPool::stop() {
    std::deque<Job> dropped;
    std::vector<std::thread> threads;
    {
        MutexLock lock(mutex_);
        stopped_ = true;
        dropped.swap(queue_);
        threads.swap(threads_);
    }
    ready_.notify_all();
    // parallel_for's helpers have no drop: their callers take every index themselves.
    for (Job& job : dropped)
        if (job.drop) job.drop();
    for (auto& t : threads) t.join();
}

size_t WorkerPool::threads() const {
    MutexLock lock(mutex_);
    return threads_.size();
}

}  // namespace ncafs
