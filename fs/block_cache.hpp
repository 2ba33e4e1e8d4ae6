// BlockCache: computed view bytes (the views whose reads are not file
// extents) kept in 64 KiB blocks; read_view (read_path.hpp) fills a miss.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "codecs/virtual_file.hpp"
#include "io/lru_cache.hpp"

namespace ncafs::fs {

// Blocks of computed (not file-extent) view bytes, most recently used kept.
// A miss computes, in one call, the run of missing blocks from the one asked
// to the end of the request plus the readahead its caller chose
// (readahead.hpp): computing a view range has a fixed cost per call
// (partition lookup, library calls), which a sequential reader spreads over
// a large run while a point reader pays for little more than its request.
// Requests for a block being computed wait for it instead of computing it again.
class BlockCache {
public:
    // The grain of the cache: what a point read computes at least.
    static constexpr uint64_t kComputedBlockSize = uint64_t{64} << 10;
    explicit BlockCache(uint64_t capacity_bytes) : blocks_(capacity_bytes / kComputedBlockSize) {}
    // Fills out with [offset, offset + out.size()) of vf through the cache;
    // a miss also computes up to `readahead` bytes after the request.
    void read(const std::shared_ptr<const VirtualFile>& vf, uint64_t offset, std::span<uint8_t> out,
              uint64_t readahead = 0);
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
    // The bytes holding block `index`: cached, being computed, or computed
    // now together with the missing blocks after it up to view offset `until`.
    Span block(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until);
    Span compute(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until);
    // Lock order: blocks are computed outside it; a dropped block may be the last
    // holder of a netCDF-4 file, closed under it (netcdf_library_mutex).
    std::mutex mutex_;
    LruCache<BlockKey, Bytes, BlockKeyHash> blocks_;
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
    std::unordered_map<BlockKey, Pending, BlockKeyHash> computing_;
    uint64_t next_ticket_ = 0;
    uint64_t generation_ = 0;  // bumped by clear(): a block computed across it is not kept
};

}  // namespace ncafs::fs
