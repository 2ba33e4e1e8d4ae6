// ViewBlockCache: computed view bytes (the views whose reads are not file
// extents) kept in 64 KiB blocks; a miss is computed by the view
// (VirtualFile::read) and read_view (view_read.hpp).
#pragma once

#include <cstdint>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "codecs/virtual_file.hpp"
#include "fs/read_context.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

// Blocks of computed (not file-extent) view bytes, most recently used kept.
// A miss computes, in one call, the run of missing blocks from the one asked
// to the end of the request: a point reader pays for little more than its
// request. For a reader going forward the readahead its caller chose
// (readahead.hpp) is computed meanwhile on a pool thread, in runs of at
// least half of it: computing a view range has a fixed cost per call
// (partition lookup, library calls), spread over many requests, and the
// reader's next requests find their bytes computed (or being computed)
// while it consumes these: the view's decoding and the reader overlap on
// two cores instead of taking turns.
// Requests for a block being computed wait for it instead of computing it again.
class ViewBlockCache {
public:
    // The grain of the cache: what a point read computes at least.
    static constexpr uint64_t kComputedBlockSize = uint64_t{64} << 10;
    // Runs computed ahead at once, in the process.
    static constexpr size_t kAheadJobs = 2;
    explicit ViewBlockCache(uint64_t capacity_bytes) : blocks_(capacity_bytes / kComputedBlockSize) {}
    ~ViewBlockCache();  // waits for the runs being computed ahead
    ViewBlockCache(const ViewBlockCache&) = delete;
    ViewBlockCache& operator=(const ViewBlockCache&) = delete;
    // Fills out with [offset, offset + out.size()) of vf through the cache;
    // with readahead > 0 the bytes up to `readahead` after the request are
    // computed ahead on a pool thread (unless cached or being computed).
    // The blocks are computed with ctx (marked a forward reader when they
    // are computed ahead: the sources need not decode ahead themselves).
    // realized_computed: the caller planned and realized the range and found
    // no file extent in it (fs/view_read.hpp): a miss computes those bytes
    // as they are instead of planning and realizing them a second time.
    void read(const std::shared_ptr<const VirtualFile>& vf, uint64_t offset, std::span<uint8_t> out,
              uint64_t readahead = 0, const ReadContext& ctx = {}, bool realized_computed = false);
    // Waits until no run is being computed ahead (tests).
    void wait_for_ahead();
    // Drops every block (a file behind some view changed).
    void clear();
    // Drops vf's blocks: an open that finds the view or a partition changed
    // (fs/partition_watch.hpp), or a view on remote objects (asked again at
    // each open), starts afresh.
    void forget(const VirtualFile* vf);

private:
    struct BlockKey {
        std::shared_ptr<const VirtualFile> file;  // held so the key pointer cannot be reused
        uint64_t index = 0;
        bool operator==(const BlockKey&) const = default;
    };
    struct BlockKeyHash {
        size_t operator()(const BlockKey& k) const {
            return std::hash<const void*>{}(k.file.get()) ^ (std::hash<uint64_t>{}(k.index) * 0x9e3779b97f4a7c15ull);
        }
    };
    using Bytes = std::shared_ptr<const std::vector<uint8_t>>;
    // Computed bytes starting at view offset `start` (a block or a run of them).
    struct Span {
        Bytes bytes;
        uint64_t start = 0;
    };
    // A run of blocks [index, end) claimed for computing: readers of its
    // blocks wait for `promise` instead of computing them.
    struct Run {
        std::shared_ptr<const VirtualFile> vf;
        uint64_t index = 0, end = 0, generation = 0, ticket = 0;
        std::promise<Bytes> promise;
    };
    // The bytes holding block `index` when cached or being computed (waits
    // for those); else nullopt, and the missing blocks from it up to view
    // offset `until` are claimed in `run` for the caller to fill.
    std::optional<Span> cached_or_claim(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until,
                                        std::optional<Run>& run);
    // Claims the missing blocks from index up to view offset `until`
    // (stopping before one cached or being computed).
    Run claim_locked(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until)
        NCAFS_REQUIRES(mutex_);
    // View bytes [begin, end) known to hold no file extent.
    struct Known {
        uint64_t begin = 0, end = 0;
    };
    // Computes a claimed run, keeps its blocks and fulfils its promise. The
    // run's bytes within `computed` are computed by the view as they are;
    // the rest is planned and realized (read_view).
    Span fill(Run& run, const ReadContext& ctx, Known computed);
    void unclaim_locked(const Run& run) NCAFS_REQUIRES(mutex_);
    // Claims and computes on a pool thread the first missing run in
    // [from, until), when it starts before from + half of the span.
    void compute_ahead(const std::shared_ptr<const VirtualFile>& vf, uint64_t from, uint64_t until,
                       const ReadContext& ctx);
    // Lock order: blocks are computed outside it; a dropped block may be the last
    // holder of a netCDF-4 file, closed under it (netcdf_library_mutex).
    Mutex mutex_;
    LruCache<BlockKey, Bytes, BlockKeyHash> blocks_ NCAFS_GUARDED_BY(mutex_);
    // Blocks being computed: a second reader of the same block (the
    // kernel's readahead runs beside the read) waits for the first rather
    // than opening and reading every partition of that run again.
    // clear() and forget() drop entries too, so that readers after them
    // compute afresh; the ticket tells a computation whether its entries are
    // still its own.
    struct Pending {
        uint64_t ticket = 0;
        uint64_t run_start = 0;  // view offset of the run's first byte
        std::shared_future<Bytes> bytes;
    };
    std::unordered_map<BlockKey, Pending, BlockKeyHash> computing_ NCAFS_GUARDED_BY(mutex_);
    uint64_t next_ticket_ NCAFS_GUARDED_BY(mutex_) = 0;
    uint64_t generation_ NCAFS_GUARDED_BY(mutex_) = 0;  // bumped by clear() and forget(): a block computed across either is not kept
    size_t ahead_jobs_ NCAFS_GUARDED_BY(mutex_) = 0;    // runs posted to the pool and not ended
    std::condition_variable ahead_ended_;
};

}  // namespace ncafs::fs
