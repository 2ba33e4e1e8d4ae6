// One opened object (RemoteBytes): reads are cut into fixed blocks served
// from the memory cache, then the disk cache, then range GETs of the
// missing runs in parallel (If-Match on the ETag seen at open). A read that
// continues the previous one also fetches the next blocks (readahead,
// doubling up to kMaxReadaheadBlocks).
#pragma once

#include <map>
#include <memory>

#include "remote/store_core.hpp"
#include "io/mutex.hpp"

namespace ncafs::remote {

class RemoteObject : public RemoteBytes {
public:
    RemoteObject(std::shared_ptr<StoreCore> core, ObjectMeta meta, ObjectAddress address);

    const std::string& url() const override { return meta_.url; }
    uint64_t size() const override { return meta_.size; }
    const std::string& version() const override { return version_; }
    void read(void* buffer, size_t n, uint64_t offset) const override;
    void read_many(std::span<const Range> ranges) const override;

    const ObjectMeta& meta() const { return meta_; }
    // Fetches bytes straight from the server (no caches), as read() checks them.
    void fetch(char* buffer, uint64_t n, uint64_t offset) const;
    // Puts a block fetched by open() into the caches.
    void keep_block(uint64_t index, Block block) const;

private:
    using Blocks = std::map<uint64_t, Block>;
    void check_inside(uint64_t n, uint64_t offset) const;
    std::vector<uint64_t> readahead_after(uint64_t n, uint64_t offset) const;
    Blocks load_blocks(const std::vector<uint64_t>& indices) const;
    void fetch_blocks(const std::vector<uint64_t>& missing, Blocks& into) const;
    void serve(std::span<const Range> ranges, std::vector<uint64_t> wanted) const;
    uint64_t block_length(uint64_t index) const;
    // Fetches requests of this object unless it failed a moment ago (then
    // throws that error at once); a failure is remembered and logged.
    void fetch_checked(const std::vector<RangeRequest>& requests) const;

    std::shared_ptr<StoreCore> core_;
    ObjectMeta meta_;
    ObjectAddress address_;
    std::string version_, key_;
    mutable Mutex sequence_mutex_;  // lock order: before RemoteBlockCache::mutex_ (readahead_after looks a block up)
    mutable uint64_t expected_next_ NCAFS_GUARDED_BY(sequence_mutex_) = 0;
    mutable unsigned readahead_ NCAFS_GUARDED_BY(sequence_mutex_) = 0;
};

// "etag=..;modified=..;size=..": changes whenever the object is replaced.
std::string version_of(const ObjectMeta& meta);
// A weak ETag ("W/...") cannot be used with If-Match (strong comparison).
std::string if_match_value(const std::string& etag);

}  // namespace ncafs::remote
