#include "aggregation/reference_set/reference_source.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <unordered_map>

#include "codecs/error.hpp"
#include "codecs/zarr/zarr_codecs.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

namespace {

using Chunk = std::shared_ptr<const std::vector<uint8_t>>;

// Decoded chunks of every reference set, by source and location, within
// cache_mem= (a chunk may take all of it: one chunk of a view read block by
// block is then decoded once, not once per block). A chunk is decoded by one
// reader while the others asking for it wait for that decode, and the
// decodes under way hold at most the bound between them (one at least), so
// readers of many large chunks at once wait rather than multiply memory.
class DecodedChunks {
public:
    static DecodedChunks& shared() {
        static DecodedChunks cache;
        return cache;
    }

    void set_capacity(uint64_t bytes) {
        MutexLock lock(mutex_);
        lru_.set_capacity(bytes);
    }

    // The chunk under key, decoded by decode (needing `bytes` while it runs) when no one has it.
    Chunk get_or_decode(const std::string& key, uint64_t bytes, const std::function<Chunk()>& decode) {
        MutexLock lock(mutex_);
        if (auto hit = lru_.get(key)) return *hit;
        if (auto flight = in_flight_.find(key); flight != in_flight_.end()) {
            auto done = flight->second;  // another reader decodes it: its chunk, or its error
            lock.unlock();
            return done.get();
        }
        std::promise<Chunk> promise;
        in_flight_.emplace(key, promise.get_future().share());
        while (decoding_ != 0 && decoding_ + bytes > lru_.capacity()) lock.wait(room_);
        decoding_ += bytes;
        lock.unlock();
        Chunk chunk;
        try {
            chunk = decode();
        } catch (...) {
            finish(key, bytes, nullptr);
            promise.set_exception(std::current_exception());
            throw;
        }
        finish(key, bytes, chunk);
        promise.set_value(chunk);
        return chunk;
    }

private:
    void finish(const std::string& key, uint64_t bytes, const Chunk& chunk) {
        MutexLock lock(mutex_);
        decoding_ -= bytes;
        in_flight_.erase(key);
        if (chunk && chunk->size() <= lru_.capacity()) lru_.put(key, chunk);
        room_.notify_all();
    }

    Mutex mutex_;  // a leaf: no other lock is taken under it, no decode runs under it
    std::condition_variable room_;
    uint64_t decoding_ NCAFS_GUARDED_BY(mutex_) = 0;  // bytes of the decodes under way
    std::unordered_map<std::string, std::shared_future<Chunk>> in_flight_ NCAFS_GUARDED_BY(mutex_);
    LruCache<std::string, Chunk, std::hash<std::string>, ByteWeight> lru_ NCAFS_GUARDED_BY(mutex_){uint64_t{256} << 20};
};

void reverse_elements(uint8_t* p, size_t n, size_t item) {
    for (size_t i = 0; i < n; ++i) std::reverse(p + i * item, p + (i + 1) * item);
}

std::atomic<uint64_t> next_source_id{1};

}  // namespace

void set_decoded_chunk_capacity(uint64_t bytes) { DecodedChunks::shared().set_capacity(bytes); }

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
    const uint64_t stored_bytes = where->file ? where->length : zarr::max_encoded_bytes(array_);
    return DecodedChunks::shared().get_or_decode(cache_key, array_.chunk_bytes + stored_bytes, [&] {
        std::vector<uint8_t> stored = store_->read(key, *where);
        try {
            return std::make_shared<const std::vector<uint8_t>>(zarr::decode_chunk(stored, array_));
        } catch (const std::runtime_error& e) {  // a codec's refusal: name the bytes it was given too
            const std::string bytes = where->file ? " (" + where->file->path() + ", bytes " +
                                                        std::to_string(where->offset) + " + " +
                                                        std::to_string(where->length) + ")"
                                                  : " (inline)";
            throw SourceError(store_->file(), "reference \"" + key + "\"" + bytes + ": " + e.what());
        }
    });
}

bool ReferenceArraySource::draws_on_other_files() const {
    if (store_->chunks_in_other_files()) return true;  // a Zarr directory store's chunk files
    const std::string prefix = name_ + "/";
    for (const auto& [key, ref] : store_->references().refs)
        if (ref.kind != Reference::Kind::Inline && key.compare(0, prefix.size(), prefix) == 0) return true;
    return false;
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
