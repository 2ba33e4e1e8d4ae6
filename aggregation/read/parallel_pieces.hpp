// Runs the pieces of one read (one per partition touched) on a few threads:
// the calling thread and up to kExtraThreads of the kept pool
// (io/worker_pool.hpp), each taking the next block of consecutive
// pieces in order, so that the partitions' preads go out together and in
// file order. Few pieces (few_pieces) are for the caller to run alone. The
// first failure (lowest piece index among those that failed) is rethrown
// after every thread stopped; pieces after a failure may be skipped.
#pragma once

#include <cstddef>
#include <functional>

namespace ncafs::agg {

inline constexpr size_t kExtraThreads = 3;
inline constexpr size_t kPiecesPerBlock = 32;

// So few that threads would cost more than they give: the caller reads
// them itself, one after the other.
inline bool few_pieces(size_t n) { return n <= kPiecesPerBlock; }

// piece(index, worker) for every index < n; `worker` (< 1 + kExtraThreads)
// names the thread, for per-thread scratch buffers. Pool threads run their
// pieces with the caller's thread settings (remote::NetworkScope,
// ForwardReaderScope).
void run_pieces(size_t n, const std::function<void(size_t index, size_t worker)>& piece);

}  // namespace ncafs::agg
