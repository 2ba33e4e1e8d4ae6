#include "aggregation/read/parallel_pieces.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "remote/network_scope.hpp"

namespace ncafs::agg {

namespace {

// The failure of the lowest piece index, kept while the threads run.
class FirstFailure {
public:
    void record(size_t index) {
        std::lock_guard lock(mutex_);
        if (!error_ || index < index_) error_ = std::current_exception(), index_ = index;
        failed_.store(true, std::memory_order_relaxed);
    }
    bool failed() const { return failed_.load(std::memory_order_relaxed); }
    void rethrow() const {
        if (error_) std::rethrow_exception(error_);
    }

private:
    std::mutex mutex_;  // lock order: a leaf
    std::exception_ptr error_;
    size_t index_ = 0;
    std::atomic<bool> failed_{false};
};

}  // namespace

void run_pieces(size_t n, const std::function<void(size_t, size_t)>& piece) {
    const size_t blocks = (n + kPiecesPerBlock - 1) / kPiecesPerBlock;
    const size_t extra = std::min(kExtraThreads, blocks > 0 ? blocks - 1 : 0);
    if (extra == 0) {
        for (size_t i = 0; i < n; ++i) piece(i, 0);
        return;
    }
    std::atomic<size_t> next_block{0};
    FirstFailure failure;
    const bool network = remote::network_allowed();  // the caller's, on every thread
    auto work = [&](size_t worker) {
        remote::NetworkScope scope(network);
        for (size_t b; !failure.failed() && (b = next_block.fetch_add(1, std::memory_order_relaxed)) < blocks;) {
            const size_t end = std::min(n, (b + 1) * kPiecesPerBlock);
            for (size_t i = b * kPiecesPerBlock; i < end; ++i) {
                try {
                    piece(i, worker);
                } catch (...) {
                    failure.record(i);
                    return;
                }
            }
        }
    };
    std::vector<std::thread> threads;
    threads.reserve(extra);
    try {
        for (size_t t = 1; t <= extra; ++t) threads.emplace_back(work, t);
    } catch (const std::system_error&) {
        // No thread to spare (a thread limit): the caller does the rest alone.
    }
    work(0);
    for (auto& t : threads) t.join();
    failure.rethrow();
}

}  // namespace ncafs::agg
