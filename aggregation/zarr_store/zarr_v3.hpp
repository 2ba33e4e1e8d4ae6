// Zarr v3 array metadata (a zarr.json of node_type "array") turned into what
// the rest of the reader knows: a Zarr v2 .zarray (checked by
// zarr::parse_zarray like any other), a .zattrs (its attributes, with
// dimension_names as _ARRAY_DIMENSIONS), and the layout of its keys (the
// chunk key encoding, sharding). Codecs: transpose (identity or reversed,
// that is order "F"), bytes (either endian), gzip, zstd, blosc, crc32c (the
// last, checked when a chunk is read) and sharding_indexed (index at the end or the
// start, index codecs bytes and crc32c). Everything else is refused by name.
// Every number is hostile until checked.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "aggregation/zarr_store/zarr_chunk_readers.hpp"
#include <optional>
#include <string>
#include <vector>

namespace ncafs::agg {

// The shards of a sharded array: each holds chunks_per_shard inner chunks
// and an index of (offset, nbytes) pairs, little or big endian, with a crc32c.
struct ShardLayout {
    std::vector<uint64_t> chunks_per_shard;
    uint64_t chunks = 1;  // product of chunks_per_shard
    bool index_at_end = true;
    bool index_big_endian = false;
    bool index_crc32c = false;
    uint64_t index_bytes() const { return chunks * 16 + (index_crc32c ? 4 : 0); }
};

// Where an array's chunks lie in the store.
struct ZarrKeyLayout {
    std::string folder;  // the array's folder beneath the store ("": the store is the array)
    size_t rank = 0;
    bool v3 = false;                    // v2: chunk keys are the array's own (dimension_separator)
    bool default_encoding = true;       // v3: "c/0/1"; false: the "v2" encoding "0.1"
    char separator = '/';               // v3: between the indices
    bool chunk_crc32c = false;          // v3: each stored chunk ends with a crc32c (4 bytes)
    std::optional<ShardLayout> shards;  // v3 sharding_indexed
    // allow_other: its metadata file's key and who could read it when the
    // store was opened (its chunks must allow them, and those who can now).
    std::string metadata_key;
    std::optional<ZarrReaders> readers;
};

struct V3Array {
    nlohmann::json zarray, zattrs;
    ZarrKeyLayout layout;
};

// Bound of one shard index: 2^20 inner chunks (16 MiB).
inline constexpr uint64_t kMaxChunksPerShard = uint64_t{1} << 20;

// Throws std::runtime_error with the reason (the caller names the array).
V3Array translate_v3_array(const nlohmann::json& node);

// The key (relative to the array's folder) of the chunk or shard at index.
std::string v3_chunk_key(const ZarrKeyLayout& layout, const std::vector<uint64_t>& index);

}  // namespace ncafs::agg
