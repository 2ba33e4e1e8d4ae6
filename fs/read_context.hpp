// The context of one read of a view, passed down explicitly from the FUSE
// operation through the planning, the realizing of runs and the block
// cache: whether it may send requests, how many partitions it opens side
// by side, the descriptor budget it draws on, and whether its caller
// computes its next bytes ahead.
#pragma once

#include <cstddef>
#include <optional>

#include "codecs/array_source.hpp"
#include "aggregation/read/remote_objects.hpp"

namespace ncafs::fs {

class FileBudget;  // fs/piece_windows.hpp

struct ReadContext {
    // False on a FUSE worker reading a view on remote objects: the read is
    // answered from the caches or not at all (reply_view_read: NeedsNetwork).
    bool network = true;
    // Runs of partitions realized side by side on the kept pool (a remote
    // partition is a round trip each).
    size_t parallel_opens = 16;
    // The descriptors of partitions held by every request in flight; null:
    // the budget shared by the process (FileBudget::shared()).
    FileBudget* budget = nullptr;
    // The caller computes this reader's next bytes ahead itself (the block
    // cache): a source need not decode ahead of the read on its own.
    bool forward_reader = false;
};

// The context on the calling thread, for the code below VirtualFile and
// ArraySource (codecs, remote), which reads it there: whether a request may
// be sent (agg::NetworkScope), whether the caller computes ahead
// (ForwardReaderScope). Restores what it found.
class ContextOnThread {
public:
    explicit ContextOnThread(const ReadContext& ctx) : network_(ctx.network) {
        if (ctx.forward_reader) forward_.emplace();
    }
    ContextOnThread(const ContextOnThread&) = delete;
    ContextOnThread& operator=(const ContextOnThread&) = delete;

private:
    agg::NetworkScope network_;
    std::optional<ForwardReaderScope> forward_;
};

}  // namespace ncafs::fs
