// Shard indexes of Zarr v3 sharded arrays (sharding_indexed): read from the
// end or the start of a shard, their crc32c checked, every (offset, nbytes)
// pair checked against the shard's size; kept in a process-wide cache
// bounded in bytes (64 MiB), one index at most 16 MiB (kMaxChunksPerShard).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aggregation/zarr_store/zarr_v3.hpp"
#include "io/open_file.hpp"

namespace ncafs::agg {

// The CRC-32C (Castagnoli) of the bytes, as Zarr v3's crc32c codec stores it.
uint32_t crc32c(std::span<const uint8_t> bytes);
// The crc32c codec's 4 stored bytes (little endian) at p.
uint32_t stored_crc32c(const uint8_t* p);

// Where one inner chunk lies in its shard; nullopt when the index marks it absent.
struct ShardEntry {
    uint64_t offset = 0, length = 0;
};

// Throws SourceError naming the shard and the reason (too short for its
// index, checksum mismatch, an entry beyond the shard).
std::optional<ShardEntry> shard_entry(const OpenFile& shard, const ShardLayout& layout, uint64_t inner);

}  // namespace ncafs::agg
