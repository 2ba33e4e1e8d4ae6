#include "aggregation/read/parallel_pieces.hpp"

#include <algorithm>
#include <optional>

#include "codecs/array_source.hpp"
#include "io/worker_pool.hpp"
#include "remote/network_scope.hpp"

namespace ncafs::agg {

void run_pieces(size_t n, const std::function<void(size_t, size_t)>& piece) {
    const size_t blocks = (n + kPiecesPerBlock - 1) / kPiecesPerBlock;
    if (few_pieces(n)) {
        for (size_t i = 0; i < n; ++i) piece(i, 0);
        return;
    }
    // The caller's settings that live on its thread, on every thread.
    const bool network = remote::network_allowed();
    const bool forward_reader = ForwardReaderScope::active();
    WorkerPool::shared().parallel_for(blocks, 1 + kExtraThreads, [&](size_t b, size_t worker) {
        remote::NetworkScope scope(network);
        std::optional<ForwardReaderScope> forward;
        if (forward_reader) forward.emplace();
        for (size_t i = b * kPiecesPerBlock, end = std::min(n, (b + 1) * kPiecesPerBlock); i < end; ++i) piece(i, worker);
    });
}

}  // namespace ncafs::agg
