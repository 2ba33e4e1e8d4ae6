#include "aggregation/reference_set/reference_source.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>

#include "codecs/error.hpp"
#include "io/lru_cache.hpp"
#include "codecs/zarr/zarr_codecs.hpp"

namespace ncafs::agg {

namespace {

using Chunk = std::shared_ptr<const std::vector<uint8_t>>;

// Decoded chunks of every reference set, by source and location.
class DecodedChunks {
public:
    static DecodedChunks& shared() {
        static DecodedChunks cache;
        return cache;
    }
    Chunk get(const std::string& key) {
        std::lock_guard lock(mutex_);
        return lru_.get(key).value_or(nullptr);
    }
    void put(const std::string& key, Chunk chunk) {
        std::lock_guard lock(mutex_);
        if (chunk->size() <= lru_.capacity() / 4) lru_.put(key, std::move(chunk));
    }

private:
    std::mutex mutex_;
    LruCache<std::string, Chunk, std::hash<std::string>, ByteWeight> lru_{64 << 20};
};

void reverse_elements(uint8_t* p, size_t n, size_t item) {
    for (size_t i = 0; i < n; ++i) std::reverse(p + i * item, p + (i + 1) * item);
}

std::atomic<uint64_t> next_source_id{1};

}  // namespace

// The part of the box being read that lies in one chunk: [lo, hi) in array coordinates.
struct ReferenceArraySource::Box {
    std::span<const uint64_t> start, count;
    std::vector<uint64_t> lo, hi;
};

ReferenceArraySource::ReferenceArraySource(std::shared_ptr<const ReferenceStore> store, std::string name,
                                           zarr::ZarrArray array)
    : store_(std::move(store)), name_(std::move(name)), array_(std::move(array)), id_(next_source_id++) {
    fill_.assign(type_size(type()), 0);
    if (array_.fill) fill_ = *array_.fill;
    if (array_.dtype.big_endian != (std::endian::native == std::endian::big))
        reverse_elements(fill_.data(), 1, fill_.size());
}

Chunk ReferenceArraySource::chunk(const std::vector<uint64_t>& index) const {
    const std::string key = name_ + "/" + zarr::chunk_key(array_, index);
    auto where = store_->locate(key, zarr::max_encoded_bytes(array_));
    if (!where) return nullptr;
    const std::string cache_key = std::to_string(id_) + "/" + key + "/" + where->tag;
    if (Chunk hit = DecodedChunks::shared().get(cache_key)) return hit;
    std::vector<uint8_t> stored = store_->read(key, *where);
    Chunk decoded;
    try {
        decoded = std::make_shared<const std::vector<uint8_t>>(zarr::decode_chunk(stored, array_));
    } catch (const std::runtime_error& e) {
        throw SourceError(store_->file(), "reference \"" + key + "\": " + e.what());
    }
    DecodedChunks::shared().put(cache_key, decoded);
    return decoded;
}

void ReferenceArraySource::copy_chunk(const Box& box, const std::vector<uint64_t>& index, const uint8_t* chunk,
                                      bool swap, uint8_t* out) const {
    const size_t rank = index.size(), item = type_size(type());
    if (rank == 0) {
        std::memcpy(out, chunk ? chunk : fill_.data(), item);
        if (swap) reverse_elements(out, 1, item);
        return;
    }
    const uint64_t run = box.hi[rank - 1] - box.lo[rank - 1];
    std::vector<uint64_t> pos(box.lo);  // the row's first element, array coordinates
    while (true) {
        uint64_t src = 0, dst = 0;
        for (size_t k = 0; k < rank; ++k) {
            src = src * array_.chunks[k] + (pos[k] - index[k] * array_.chunks[k]);
            dst = dst * box.count[k] + (pos[k] - box.start[k]);
        }
        uint8_t* to = out + dst * item;
        if (chunk) std::memcpy(to, chunk + src * item, run * item);
        else fill_elements(to, fill_.data(), item, run);
        if (swap) reverse_elements(to, run, item);
        size_t k = rank - 1;  // next row: odometer over all but the last dimension
        while (k > 0 && ++pos[k - 1] == box.hi[k - 1]) {
            pos[k - 1] = box.lo[k - 1];
            --k;
        }
        if (k == 0) return;
    }
}

void ReferenceArraySource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                                void* out) const {
    check_box(shape(), start, count, name_.c_str());
    const size_t rank = shape().size();
    for (uint64_t c : count)
        if (c == 0) return;
    const bool want_big = order == ByteOrder::Big || std::endian::native == std::endian::big;
    const bool swap = type_size(type()) > 1 && array_.dtype.big_endian != want_big;
    std::vector<uint64_t> first(rank), last(rank);
    for (size_t k = 0; k < rank; ++k) {
        first[k] = start[k] / array_.chunks[k];
        last[k] = (start[k] + count[k] - 1) / array_.chunks[k];
    }
    std::vector<uint64_t> index = first;
    Box box{start, count, std::vector<uint64_t>(rank), std::vector<uint64_t>(rank)};
    while (true) {
        for (size_t k = 0; k < rank; ++k) {
            box.lo[k] = std::max(start[k], index[k] * array_.chunks[k]);
            box.hi[k] = std::min(start[k] + count[k], (index[k] + 1) * array_.chunks[k]);
        }
        const Chunk c = chunk(index);
        copy_chunk(box, index, c ? c->data() : nullptr, swap, static_cast<uint8_t*>(out));
        size_t k = rank;  // next chunk: odometer
        while (k > 0 && index[k - 1] == last[k - 1]) {
            index[k - 1] = first[k - 1];
            --k;
        }
        if (k == 0) return;
        ++index[k - 1];
    }
}

}  // namespace ncafs::agg
