// A process-wide, bounded LRU cache of decoded VDS chunks, keyed by the
// container's FileIdentity (so a replaced or modified file never hits), the
// layer name and the chunk index. Thread-safe; entries are immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/open_file.hpp"

namespace ncafs::vds {

using DecodedChunk = std::shared_ptr<const std::vector<uint8_t>>;

constexpr uint64_t kDefaultChunkCacheBytes = 64ull << 20;

// Returns the cached chunk or calls decode (outside the lock) and keeps its
// result while the total stays under the budget (default 64 MiB), evicting
// the least recently used chunks.
DecodedChunk cached_chunk(const FileIdentity& file, const std::string& layer, uint64_t chunk,
                          const std::function<std::vector<uint8_t>()>& decode);

// Bytes of decoded chunks held now, and the budget (tests set a small one).
uint64_t chunk_cache_bytes();
void set_chunk_cache_budget(uint64_t bytes);

}  // namespace ncafs::vds
