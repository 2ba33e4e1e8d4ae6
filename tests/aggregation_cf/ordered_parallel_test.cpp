// produce_in_parallel_consume_in_order (what `ncafs aggregate` reads its
// inputs with): results consumed in index order whatever the threads'
// timing, at most `window` ahead, failures rethrown in their turn.
#include "aggregation/write/ordered_parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

using ncafs::agg::produce_in_parallel_consume_in_order;

namespace {

// A few microseconds that differ from index to index, so that threads finish out of order.
void uneven_delay(size_t i) { std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 200)); }

}  // namespace

TEST(OrderedParallel, ConsumesInIndexOrderAtMostAWindowAhead) {
    constexpr size_t kCount = 3000, kWindow = 16;
    std::atomic<size_t> started{0}, consumed{0}, most_ahead{0};
    size_t expected = 0;
    produce_in_parallel_consume_in_order<size_t>(
        kCount, 4, kWindow,
        [&](size_t i) {
            const size_t ahead = ++started - consumed;
            for (size_t m = most_ahead; ahead > m && !most_ahead.compare_exchange_weak(m, ahead);) {
            }
            uneven_delay(i);
            return i * 3;
        },
        [&](size_t i, size_t value) {
            ASSERT_EQ(i, expected);
            ASSERT_EQ(value, i * 3);
            ++expected, ++consumed;
        });
    EXPECT_EQ(expected, kCount);
    EXPECT_LE(most_ahead.load(), kWindow + 1);  // the window, and the result being consumed
    EXPECT_GE(most_ahead.load(), 2u) << "the threads never overlapped";
}

TEST(OrderedParallel, AFailureIsRethrownInItsTurn) {
    size_t consumed = 0;
    EXPECT_THROW(produce_in_parallel_consume_in_order<size_t>(
                     1000, 3, 64,
                     [](size_t i) {
                         uneven_delay(i);
                         if (i == 500) throw std::runtime_error("file 500");
                         return i;
                     },
                     [&](size_t i, size_t) {
                         EXPECT_EQ(i, consumed);
                         ++consumed;
                     }),
                 std::runtime_error);
    EXPECT_EQ(consumed, 500u) << "every result before the failure, none after";
}

TEST(OrderedParallel, AFailingConsumerStopsTheWorkers) {
    std::atomic<size_t> produced{0};
    EXPECT_THROW(produce_in_parallel_consume_in_order<size_t>(
                     100000, 4, 32, [&](size_t i) { return ++produced, i; },
                     [](size_t i, size_t) {
                         if (i == 100) throw std::runtime_error("consumer");
                     }),
                 std::runtime_error);
    EXPECT_LE(produced.load(), 101u + 32u) << "the workers went on after the failure";
}

TEST(OrderedParallel, NoInputsAndOneInput) {
    size_t calls = 0;
    produce_in_parallel_consume_in_order<int>(0, 4, 8, [](size_t) { return 1; }, [&](size_t, int) { ++calls; });
    EXPECT_EQ(calls, 0u);
    produce_in_parallel_consume_in_order<int>(1, 4, 8, [](size_t) { return 7; }, [&](size_t, int v) { calls += v; });
    EXPECT_EQ(calls, 7u);
}
