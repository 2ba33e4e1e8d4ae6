// Random access into one large zlib stream (a deflated ncstream payload too
// big for the inflate cache). Inflating from the start on every read made a
// 4 MB file that inflates to 4 GiB cost seconds per 4 KiB read near its end,
// and a full sequential read quadratic. The index splits the output into
// blocks of block_size() bytes and keeps a snapshot of the inflater (zlib
// inflateCopy: state and 32 KiB window) at the start of every block reached
// so far, so a block is inflated from its own snapshot: after the first pass
// the work per block is one block. At most kMaxBlocks blocks (bounded
// snapshot memory); a payload needing bigger blocks than max_block is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/mutex.hpp"

namespace ncafs::ncstream {

class InflateIndex {
public:
    static constexpr uint64_t kMaxBlocks = 512;
    static constexpr uint64_t kMinBlock = uint64_t{4} << 20;
    using Fetch = std::function<void(uint64_t offset, std::span<uint8_t> buffer)>;  // compressed bytes

    // Block size for a payload of raw_size bytes: at least kMinBlock, at most
    // kMaxBlocks blocks; nullopt when that exceeds max(max_block, kMinBlock)
    // (with a 64 MiB inflate cache: payloads above 8 GiB are refused).
    static std::optional<uint64_t> block_size_for(uint64_t raw_size, uint64_t max_block);

    InflateIndex(uint64_t compressed_size, uint64_t raw_size, uint64_t block_size);
    ~InflateIndex();
    InflateIndex(const InflateIndex&) = delete;
    InflateIndex& operator=(const InflateIndex&) = delete;

    uint64_t block_size() const { return block_; }
    uint64_t block_count() const { return (raw_ + block_ - 1) / block_; }
    uint64_t block_bytes(uint64_t b) const { return std::min(block_, raw_ - b * block_); }

    // Inflates block b into out (block_bytes(b) bytes); returns the reason on failure.
    std::optional<std::string> inflate_block(uint64_t b, std::span<uint8_t> out, const Fetch& fetch);

private:
    struct Snapshot;
    std::optional<std::string> run_block(Snapshot& s, uint64_t b, uint8_t* out, const Fetch& fetch);

    uint64_t compressed_, raw_, block_;
    Mutex mutex_;  // lock order: before the remote store's (fetch reads the file under it)
    std::vector<std::unique_ptr<Snapshot>> snapshots_ NCAFS_GUARDED_BY(mutex_);  // [b]: inflater at the start of block b, once reached
};

}  // namespace ncafs::ncstream
