// run_pieces: every piece runs once, and the pool threads that run pieces
// carry the caller's read settings that live on its thread (whether a
// request may be sent; whether the caller computes ahead itself), as the
// caller's own thread does.
#include "aggregation/read/parallel_pieces.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "codecs/array_source.hpp"
#include "remote/network_scope.hpp"

namespace ncafs::agg {
namespace {

struct Seen {
    std::vector<std::atomic<int>> runs, network, forward;
    std::atomic<size_t> on_pool{0};  // pieces run by a thread other than the caller's
    explicit Seen(size_t n) : runs(n), network(n), forward(n) {}
};

void run_and_record(size_t n, Seen& seen) {
    const auto caller = std::this_thread::get_id();
    run_pieces(n, [&](size_t i, size_t worker) {
        ASSERT_LT(worker, 1 + kExtraThreads);
        if (std::this_thread::get_id() != caller) seen.on_pool += 1;
        // Long enough that the pool's threads take blocks before the caller has done them all.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        seen.runs[i] += 1;
        seen.network[i] = remote::network_allowed() ? 1 : 0;
        seen.forward[i] = ForwardReaderScope::active() ? 1 : 0;
    });
}

TEST(ParallelPieces, PoolThreadsCarryTheCallersNetworkAndForwardReaderSettings) {
    const size_t n = 8 * kPiecesPerBlock;  // many blocks: the pool's threads take most
    ASSERT_FALSE(few_pieces(n));
    Seen seen(n);
    {
        remote::NetworkScope no_requests(false);
        ForwardReaderScope computed_ahead;
        run_and_record(n, seen);
    }
    ASSERT_GT(seen.on_pool, 0u) << "no piece ran on the pool: the test shows nothing";
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(seen.runs[i], 1) << "piece " << i;
        EXPECT_EQ(seen.network[i], 0) << "piece " << i << " may send requests its caller may not";
        EXPECT_EQ(seen.forward[i], 1) << "piece " << i << " would decode ahead of a reader computed ahead";
    }
}

TEST(ParallelPieces, FewPiecesRunOnTheCallersThreadWithItsSettings) {
    const size_t n = kPiecesPerBlock;
    ASSERT_TRUE(few_pieces(n));
    Seen seen(n);
    run_and_record(n, seen);  // network allowed, no forward reader: the defaults
    EXPECT_EQ(seen.on_pool, 0u);
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(seen.runs[i], 1);
        EXPECT_EQ(seen.network[i], 1);
        EXPECT_EQ(seen.forward[i], 0);
    }
}

}  // namespace
}  // namespace ncafs::agg
