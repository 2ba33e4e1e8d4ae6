#include "aggregation/zarr_store/zarr_shards.hpp"

#include <array>

#include "codecs/checked_math.hpp"
#include "codecs/error.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

namespace {

using Index = std::shared_ptr<const std::vector<uint64_t>>;  // offset, nbytes per inner chunk, native order

std::array<uint32_t, 256> crc32c_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    return table;
}

uint64_t load64(const uint8_t* p, bool big_endian) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{p[big_endian ? 7 - i : i]} << (8 * i);
    return v;
}

class ShardIndexes {
public:
    static ShardIndexes& shared() {
        static ShardIndexes cache;
        return cache;
    }
    Index get(const std::string& key) {
        MutexLock lock(mutex_);
        return lru_.get(key).value_or(nullptr);
    }
    void put(const std::string& key, Index index) {
        MutexLock lock(mutex_);
        lru_.put(key, std::move(index));
    }

private:
    Mutex mutex_;
    LruCache<std::string, Index, std::hash<std::string>, ByteWeight> lru_ NCAFS_GUARDED_BY(mutex_){uint64_t{64} << 20 >> 3};  // in elements
};

Index read_index(const OpenFile& shard, const ShardLayout& layout) {
    const uint64_t bytes = layout.index_bytes(), size = shard.size();
    if (size < bytes)
        throw SourceError(shard.path(), "shard of " + std::to_string(size) + " bytes is shorter than its index (" +
                                            std::to_string(bytes) + " bytes)");
    std::vector<uint8_t> raw(bytes);
    shard.pread_exact(raw.data(), raw.size(), layout.index_at_end ? size - bytes : 0);
    if (layout.index_crc32c) {
        if (crc32c({raw.data(), bytes - 4}) != stored_crc32c(raw.data() + bytes - 4))
            throw SourceError(shard.path(), "shard index fails its crc32c check");
    }
    auto index = std::make_shared<std::vector<uint64_t>>(layout.chunks * 2);
    for (uint64_t i = 0; i < layout.chunks * 2; ++i) (*index)[i] = load64(raw.data() + 8 * i, layout.index_big_endian);
    return index;
}

std::string identity_tag(const OpenFile& f) {
    const FileIdentity& id = f.identity();
    return std::to_string(id.device) + ":" + std::to_string(id.inode) + ":" + std::to_string(id.mtime_ns) + ":" +
           std::to_string(id.ctime_ns) + ":" + std::to_string(id.size);
}

}  // namespace

uint32_t crc32c(std::span<const uint8_t> bytes) {
    static const std::array<uint32_t, 256> table = crc32c_table();
    uint32_t c = 0xFFFFFFFFu;
    for (uint8_t b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t stored_crc32c(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::optional<ShardEntry> shard_entry(const OpenFile& shard, const ShardLayout& layout, uint64_t inner) {
    const std::string key = identity_tag(shard) + "/" + std::to_string(layout.index_bytes()) +
                            (layout.index_at_end ? "e" : "s") + (layout.index_big_endian ? "b" : "l");
    Index index = ShardIndexes::shared().get(key);
    if (!index) {
        index = read_index(shard, layout);
        ShardIndexes::shared().put(key, index);
    }
    const uint64_t offset = (*index)[2 * inner], length = (*index)[2 * inner + 1];
    if (offset == UINT64_MAX && length == UINT64_MAX) return std::nullopt;
    if (!checked::fits_in(offset, length, shard.size()))
        throw SourceError(shard.path(), "shard index entry " + std::to_string(inner) + " (bytes " +
                                            std::to_string(offset) + " + " + std::to_string(length) +
                                            ") lies beyond the shard's " + std::to_string(shard.size()) + " bytes");
    return ShardEntry{offset, length};
}

}  // namespace ncafs::agg
