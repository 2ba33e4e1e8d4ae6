// A loop whose bodies read in parallel and merge in order: produce(i) runs on
// a few worker threads, consume(i, result) on the calling thread in order of
// i. What consume sees is what a serial loop gives, whatever the timing;
// results wait at most `window` ahead of consume (bounded memory, and each
// worker holds what it opened for one produce call only: bounded
// descriptors). Used by `ncafs aggregate` to read many headers at once.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "io/mutex.hpp"

namespace ncafs::agg {

// Threads for reading many small files whose metadata is in the page cache:
// one per core, at most 8 (more only contend for the consumer).
inline unsigned reader_threads() { return std::clamp(std::thread::hardware_concurrency(), 1u, 8u); }

// What the workers and the consumer share, under its mutex.
template <class Result>
struct OrderedSlots {
    struct Slot {
        std::optional<Result> result;
        std::exception_ptr error;
        bool ready = false;
    };
    explicit OrderedSlots(size_t n) : slots(n) {}
    Mutex mutex;
    std::condition_variable produced, consumed;
    std::vector<Slot> slots NCAFS_GUARDED_BY(mutex);  // index i at i % size
    size_t next NCAFS_GUARDED_BY(mutex) = 0;          // the next index to claim
    size_t done NCAFS_GUARDED_BY(mutex) = 0;          // indices below are consumed
    bool stop NCAFS_GUARDED_BY(mutex) = false;
};

// An exception from produce(i) is rethrown when i's turn to be consumed
// comes; one from consume stops the workers and is rethrown after they end.
template <class Result, class Produce, class Consume>
void produce_in_parallel_consume_in_order(size_t count, unsigned threads, size_t window, Produce&& produce,
                                          Consume&& consume) {
    using Shared = OrderedSlots<Result>;
    using Slot = typename Shared::Slot;
    window = std::min(std::max<size_t>(window, 1), std::max<size_t>(count, 1));
    Shared shared(window);
    // Indices are claimed, and results published, `batch` at a time: one
    // lock and one wake-up per batch rather than per file.
    const size_t batch = std::clamp<size_t>(window / (4 * std::max(threads, 1u)), 1, 64);
    auto work = [&] {
        std::vector<Slot> made;
        for (;;) {
            size_t first = 0, last = 0;
            {
                MutexLock lock(shared.mutex);
                while (!shared.stop && shared.next < count && shared.next >= shared.done + window - batch + 1)
                    lock.wait(shared.consumed);
                if (shared.stop || shared.next >= count) return;
                first = shared.next;
                last = shared.next = std::min({count, first + batch, shared.done + window});
            }
            made.clear();
            for (size_t i = first; i < last; ++i) {
                Slot s;
                try {
                    s.result.emplace(produce(i));
                } catch (...) {
                    s.error = std::current_exception();
                }
                s.ready = true;
                made.push_back(std::move(s));
            }
            {
                MutexLock lock(shared.mutex);
                for (size_t i = first; i < last; ++i) shared.slots[i % window] = std::move(made[i - first]);
            }
            shared.produced.notify_one();  // only the consumer waits for results
        }
    };
    std::vector<std::thread> pool;
    auto finish = [&] {
        {
            MutexLock lock(shared.mutex);
            shared.stop = true;
        }
        shared.consumed.notify_all();
        for (auto& t : pool) t.join();
    };
    threads = static_cast<unsigned>(std::clamp<size_t>(threads, 1, std::max<size_t>(count, 1)));
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
    try {
        for (size_t i = 0; i < count; ++i) {
            Slot taken;
            {
                MutexLock lock(shared.mutex);
                while (!shared.slots[i % window].ready) lock.wait(shared.produced);
                taken = std::exchange(shared.slots[i % window], Slot{});
                shared.done = i + 1;
            }
            shared.consumed.notify_all();
            if (taken.error) std::rethrow_exception(taken.error);
            consume(i, std::move(*taken.result));
        }
    } catch (...) {
        finish();
        throw;
    }
    finish();
}

}  // namespace ncafs::agg
