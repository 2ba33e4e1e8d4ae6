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
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace ncafs::agg {

// Threads for reading many small files whose metadata is in the page cache:
// one per core, at most 8 (more only contend for the consumer).
inline unsigned reader_threads() { return std::clamp(std::thread::hardware_concurrency(), 1u, 8u); }

// An exception from produce(i) is rethrown when i's turn to be consumed
// comes; one from consume stops the workers and is rethrown after they end.
template <class Result, class Produce, class Consume>
void produce_in_parallel_consume_in_order(size_t count, unsigned threads, size_t window, Produce&& produce,
                                          Consume&& consume) {
    struct Slot {
        std::optional<Result> result;
        std::exception_ptr error;
        bool ready = false;
    };
    window = std::max<size_t>(window, 1);
    std::vector<Slot> slots(std::min(window, std::max<size_t>(count, 1)));
    window = slots.size();
    std::mutex m;
    std::condition_variable produced, consumed;
    size_t next = 0, done = 0;  // next index to claim; indices below `done` are consumed
    bool stop = false;
    // Indices are claimed, and results published, `batch` at a time: one
    // lock and one wake-up per batch rather than per file.
    const size_t batch = std::clamp<size_t>(window / (4 * std::max(threads, 1u)), 1, 64);
    auto work = [&] {
        std::vector<Slot> made;
        for (;;) {
            size_t first = 0, last = 0;
            {
                std::unique_lock lock(m);
                consumed.wait(lock, [&] { return stop || next >= count || next < done + window - batch + 1; });
                if (stop || next >= count) return;
                first = next;
                last = next = std::min({count, first + batch, done + window});
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
                std::lock_guard lock(m);
                for (size_t i = first; i < last; ++i) slots[i % window] = std::move(made[i - first]);
            }
            produced.notify_one();  // only the consumer waits for results
        }
    };
    std::vector<std::thread> pool;
    auto finish = [&] {
        {
            std::lock_guard lock(m);
            stop = true;
        }
        consumed.notify_all();
        for (auto& t : pool) t.join();
    };
    threads = static_cast<unsigned>(std::clamp<size_t>(threads, 1, std::max<size_t>(count, 1)));
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
    try {
        for (size_t i = 0; i < count; ++i) {
            Slot taken;
            {
                std::unique_lock lock(m);
                Slot& s = slots[i % window];
                produced.wait(lock, [&] { return s.ready; });
                taken = std::move(s);
                s = Slot{};
                done = i + 1;
            }
            consumed.notify_all();
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
