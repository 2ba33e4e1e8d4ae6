#include "codecs/netcdf/decoded_chunk_cache.hpp"

#include <functional>

namespace ncafs::netcdf {

namespace {

size_t mix(size_t seed, uint64_t value) {
    return seed ^ (std::hash<uint64_t>{}(value) + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

}  // namespace

size_t DecodedChunkCache::KeyHash::operator()(const Key& k) const {
    size_t h = mix(0, k.file.device);
    h = mix(h, k.file.inode);
    h = mix(h, static_cast<uint64_t>(k.file.mtime_ns));
    h = mix(h, k.serial);
    h = mix(h, static_cast<uint64_t>(k.group));
    h = mix(h, static_cast<uint64_t>(k.varid));
    for (uint64_t c : k.chunk) h = mix(h, c);
    return h;
}

DecodedChunkCache& DecodedChunkCache::shared() {
    static DecodedChunkCache cache;
    return cache;
}

DecodedChunkCache::DecodedChunkCache(uint64_t capacity_bytes) : chunks_(capacity_bytes) {}

void DecodedChunkCache::set_capacity(uint64_t bytes) {
    MutexLock lock(mutex_);
    chunks_.set_capacity(bytes);
}

uint64_t DecodedChunkCache::capacity() const {
    MutexLock lock(mutex_);
    return chunks_.capacity();
}

uint64_t DecodedChunkCache::weight() const {
    MutexLock lock(mutex_);
    return chunks_.weight();
}

size_t DecodedChunkCache::entries() const {
    MutexLock lock(mutex_);
    return chunks_.size();
}

uint64_t DecodedChunkCache::largest_entry() const { return capacity() / 8; }

DecodedChunkCache::Chunk DecodedChunkCache::get(const Key& key) {
    MutexLock lock(mutex_);
    auto hit = chunks_.get(key);
    return hit ? std::move(*hit) : nullptr;
}

void DecodedChunkCache::put(const Key& key, Chunk bytes) {
    if (!bytes) return;
    MutexLock lock(mutex_);
    if (Weigh{}(bytes) > chunks_.capacity() / 8) return;
    chunks_.put(key, std::move(bytes));
}

void DecodedChunkCache::clear() {
    MutexLock lock(mutex_);
    chunks_.clear();
}

}  // namespace ncafs::netcdf
