#include "fs/remote_workers.hpp"

namespace ncafs::fs {

void RemoteWorkers::start(size_t threads) {
    std::lock_guard lock(mutex_);
    if (running_) return;
    running_ = true;
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

bool RemoteWorkers::submit(std::function<void()> run, std::function<void()> drop) {
    {
        std::lock_guard lock(mutex_);
        if (!running_) return false;
        queue_.push_back(Job{std::move(run), std::move(drop)});
    }
    ready_.notify_one();
    return true;
}

void RemoteWorkers::loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        ready_.wait(lock, [&] { return !running_ || !queue_.empty(); });
        if (!running_) return;
        Job job = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        job.run();  // answers its request, whatever happens (the jobs catch everything)
        lock.lock();
    }
}

void RemoteWorkers::stop() {
    std::deque<Job> dropped;
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        running_ = false;
        dropped.swap(queue_);
        threads.swap(threads_);
    }
    ready_.notify_all();
    for (Job& job : dropped) job.drop();
    for (std::thread& t : threads) t.join();
}

}  // namespace ncafs::fs
