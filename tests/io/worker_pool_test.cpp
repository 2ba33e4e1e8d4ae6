// WorkerPool: every index runs once, on kept threads (the same threads for
// every call, none started per call), a failure is rethrown after every
// call ended, nested calls from pool threads finish, a full queue or a
// stopped pool leaves the work to the caller, and stop() drops queued jobs
// (their drop runs) and joins the threads after the running ones.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "io/worker_pool.hpp"

namespace ncafs {
namespace {

TEST(WorkerPool, EveryIndexOnceWithWorkersInRange) {
    WorkerPool pool(4);
    std::vector<std::atomic<int>> seen(1000);
    std::atomic<bool> worker_out_of_range{false};
    pool.parallel_for(seen.size(), 4, [&](size_t i, size_t worker) {
        if (worker >= 4) worker_out_of_range = true;
        seen[i].fetch_add(1);
    });
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "index " << i;
    EXPECT_FALSE(worker_out_of_range.load());
}

TEST(WorkerPool, ThreadsAreKeptAcrossCalls) {
    WorkerPool pool(3);
    std::mutex mutex;
    std::set<std::thread::id> first, later;
    const auto caller = std::this_thread::get_id();
    auto record = [&](std::set<std::thread::id>& into) {
        return [&](size_t, size_t) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // so that helpers get some
            std::lock_guard lock(mutex);
            if (std::this_thread::get_id() != caller) into.insert(std::this_thread::get_id());
        };
    };
    pool.parallel_for(64, 4, record(first));
    EXPECT_EQ(pool.threads(), 3u);
    for (int call = 0; call < 20; ++call) pool.parallel_for(64, 4, record(later));
    EXPECT_EQ(pool.threads(), 3u) << "threads were started per call";
    ASSERT_FALSE(later.empty()) << "no pool thread ever helped";
    std::set<std::thread::id> all = first;
    all.insert(later.begin(), later.end());
    EXPECT_LE(all.size(), 3u) << "more distinct helper threads than the pool holds";
}

TEST(WorkerPool, FailureIsRethrownAfterEveryCallEnded) {
    WorkerPool pool(4);
    std::atomic<int> running{0}, most{0};
    try {
        pool.parallel_for(200, 4, [&](size_t i, size_t) {
            running.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            running.fetch_sub(1);
            if (i == 37) throw std::runtime_error("index 37");
        });
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "index 37");
    }
    EXPECT_EQ(running.load(), 0) << "parallel_for returned while calls were running";
    (void)most;
}

TEST(WorkerPool, NestedCallsFromPoolThreadsFinish) {
    WorkerPool pool(2);
    std::atomic<int> inner{0};
    pool.parallel_for(8, 3, [&](size_t, size_t) {
        pool.parallel_for(8, 3, [&](size_t, size_t) { inner.fetch_add(1); });
    });
    EXPECT_EQ(inner.load(), 64);
}

TEST(WorkerPool, FullQueueLeavesTheWorkToTheCaller) {
    WorkerPool pool(1, 0);  // no queue at all: nothing can be handed over
    std::set<std::thread::id> ran;
    pool.parallel_for(50, 8, [&](size_t, size_t worker) {
        EXPECT_EQ(worker, 0u);
        ran.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ran.size(), 1u);
    EXPECT_EQ(*ran.begin(), std::this_thread::get_id());
    EXPECT_FALSE(pool.post([] {}));
}

TEST(WorkerPool, StopJoinsAndLaterCallsRunOnTheCaller) {
    WorkerPool pool(4);
    std::atomic<int> n{0};
    pool.parallel_for(100, 4, [&](size_t, size_t) { n.fetch_add(1); });
    std::atomic<bool> posted_ran{false};
    ASSERT_TRUE(pool.post([&] { posted_ran = true; }));
    pool.stop();
    EXPECT_EQ(pool.threads(), 0u);
    EXPECT_FALSE(pool.post([] {}));
    pool.parallel_for(100, 4, [&](size_t, size_t worker) {
        EXPECT_EQ(worker, 0u);
        n.fetch_add(1);
    });
    EXPECT_EQ(n.load(), 200);
    pool.stop();  // idempotent
}

TEST(WorkerPool, StopDropsQueuedJobsAndWaitsForRunningOnes) {
    WorkerPool pool(1);
    std::atomic<bool> release{false}, started{false}, b_ran{false}, a_done{false};
    std::atomic<int> dropped{0};
    ASSERT_TRUE(pool.post([&] {
        started = true;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        a_done = true;
    }));
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(pool.post([&] { b_ran = true; }, [&] { ++dropped; }));
    std::thread stopper([&] { pool.stop(); });
    while (dropped.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_FALSE(a_done.load()) << "stop() must not wait for the running job before dropping the queued ones";
    release = true;
    stopper.join();
    EXPECT_TRUE(a_done.load()) << "stop() returned before the running job ended";
    EXPECT_FALSE(b_ran.load());
    EXPECT_EQ(dropped.load(), 1);
}

}  // namespace
}  // namespace ncafs
