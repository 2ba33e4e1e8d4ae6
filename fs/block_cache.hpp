// BlockCache: computed view bytes kept in 1 MiB blocks for the views whose
// reads are computed (not file extents); read_view fills a missed block.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

#include "codecs/lru_cache.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs::fs {

// Blocks of computed (not file-extent) view bytes, 1 MiB aligned, most
// recently used kept. The kernel asks in readahead-sized pieces (128 KiB);
// computing a view range has a fixed cost per call (partition lookup, library
// calls), so one call per MiB serves the next seven requests from memory;
// requests for a block being computed wait for it instead of computing it again.
class BlockCache {
public:
    static constexpr uint64_t kBlockSize = 1u << 20;
    explicit BlockCache(size_t capacity_blocks) : blocks_(capacity_blocks) {}
    // Fills out with [offset, offset + out.size()) of vf through the cache.
    void read(const std::shared_ptr<const VirtualFile>& vf, uint64_t offset, std::span<uint8_t> out);
    // Drops every block (a file behind some view changed).
    void clear();
    // Drops vf's blocks: computed bytes may come from partitions that
    // changed since (nothing in an unchanged view notices that), so each
    // open starts afresh and blocks live at most as long as one open's reads.
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
    Bytes block(const std::shared_ptr<const VirtualFile>& vf, uint64_t index);
    Bytes compute(const std::shared_ptr<const VirtualFile>& vf, uint64_t index);
    std::mutex mutex_;
    LruCache<BlockKey, Bytes, BlockKeyHash> blocks_;
    // Blocks being computed: a second reader of the same block (the
    // kernel's readahead runs beside the read) waits for the first rather
    // than opening and reading every partition of that MiB again.
    // clear() and forget() drop entries too, so that readers after them
    // compute afresh; the ticket tells a computation whether its entry is
    // still its own.
    struct Pending {
        uint64_t ticket = 0;
        std::shared_future<Bytes> bytes;
    };
    std::unordered_map<BlockKey, Pending, BlockKeyHash> computing_;
    uint64_t next_ticket_ = 0;
    uint64_t generation_ = 0;  // bumped by clear(): a block computed across it is not kept
};

}  // namespace ncafs::fs
