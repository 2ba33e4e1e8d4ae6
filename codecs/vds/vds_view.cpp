#include "codecs/vds/vds_view.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <mutex>

#include "codecs/error.hpp"
#include "io/lru_cache.hpp"
#include "io/metadata_budget.hpp"
#include "io/worker_pool.hpp"
#include "codecs/vds/vds_buffer_pool.hpp"
#include "codecs/vds/vds_writer_batch.hpp"
#include "codecs/vds/vds_writer_container.hpp"
#include "io/mutex.hpp"

namespace ncafs {
namespace {

// A chunk object's bytes (fill_batch writes every one), in a pooled buffer
// given back when the object leaves the cache.
class ObjectBytes {
public:
    explicit ObjectBytes(size_t n) : buffer_(vds::take_buffer(n)), length_(n) {}
    ~ObjectBytes() { vds::give_buffer(std::move(buffer_)); }
    ObjectBytes(const ObjectBytes&) = delete;
    ObjectBytes& operator=(const ObjectBytes&) = delete;
    size_t size() const { return length_; }
    uint8_t* data() const { return buffer_.bytes.get(); }

private:
    vds::Buffer buffer_;
    size_t length_;
};
using Bytes = std::shared_ptr<const ObjectBytes>;

// Chunk objects of every .vds view, made a batch at a time: one process-wide
// bound (views are many, each read a batch at a time) of three batches, so
// a sequential reader finds the rest of its batch there while the next one,
// made ahead, and the one after arrive.
constexpr size_t kObjectCacheBytes = 3 * vds::kBatchBytes;
// Batches made ahead at once, of all views (each up to kBatchBytes of
// samples, its scratch and its objects).
constexpr size_t kBatchesAhead = 1;
// Objects this close to the last one read continue a sequential read (the
// kernel's readahead sends a few at once, out of order); after this many
// bytes so read (more than one brick of floats) it is one.
constexpr size_t kNearObjects = 4;
constexpr uint64_t kSequentialBytes = 2 << 20;

struct ObjectKey {
    uint64_t view = 0;
    size_t index = 0;
    bool operator==(const ObjectKey&) const = default;
};
struct ObjectKeyHash {
    size_t operator()(const ObjectKey& k) const { return std::hash<uint64_t>{}(k.view * 0x9E3779B97F4A7C15ull ^ k.index); }
};

struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const {
        return std::hash<uint64_t>{}(p.first * 0x9E3779B97F4A7C15ull ^ p.second);
    }
};

struct ObjectCache {
    // Lock order: before the buffer pool's (an evicted object gives its
    // buffer back under it); batches are made outside it.
    Mutex mutex NCAFS_ACQUIRED_BEFORE(vds::buffer_pool_mutex);
    LruCache<ObjectKey, Bytes, ObjectKeyHash, ByteWeight> objects NCAFS_GUARDED_BY(mutex){kObjectCacheBytes};
    // Batches being made: a reader of the same batch waits instead of making it again.
    std::map<std::pair<uint64_t, uint64_t>, std::shared_future<void>> in_flight NCAFS_GUARDED_BY(mutex);  // (view, layer << 32 | batch)
    // Batches that could not be read: their chunks are made one by one (bounded: oldest dropped).
    LruCache<std::pair<uint64_t, uint64_t>, bool, PairHash> failed NCAFS_GUARDED_BY(mutex){1024};
    size_t batches_ahead NCAFS_GUARDED_BY(mutex) = 0;  // in_flight batches made ahead of a sequential reader, on the worker pool
    size_t most_batches_ahead NCAFS_GUARDED_BY(mutex) = 0;
    std::atomic<uint64_t> next_view{1};
};

ObjectCache& object_cache() {
    static ObjectCache* cache = new ObjectCache;  // never destroyed: FUSE threads may read until exit
    return *cache;
}

class VdsView final : public VirtualFile, public std::enable_shared_from_this<VdsView> {
public:
    VdsView(std::shared_ptr<const Dataset> ds, vds::WriterPlan plan)
        : ds_(std::move(ds)), plan_(std::move(plan)), layout_(vds::build_container(plan_)),
          id_(object_cache().next_view++) {
        std::vector<std::vector<vds::LayerGeometry>> lods(plan_.channels.size());  // per channel, LOD 0..N in order
        for (const auto& l : layout_.layers) lods[l.channel].push_back(l.geometry);
        for (size_t c = 0; c < plan_.channels.size(); ++c)
            stores_.push_back(vds::LodStore::make(std::move(lods[c]), type_size(plan_.channels[c].source_type)));
    }

    uint64_t size() const override { return layout_.size; }
    bool caches_its_bytes() const override { return true; }  // the object cache

    void read(uint64_t offset, std::span<uint8_t> out) const override {
        size_t done = 0;
        const std::vector<HeldBytes> pieces = *held(offset, out.size());
        for (const HeldBytes& piece : pieces) {
            std::memcpy(out.data() + done, piece.data, piece.size);
            done += piece.size;
        }
    }

    // The prefix (held by the view) and the cached objects of the range.
    std::optional<std::vector<HeldBytes>> held(uint64_t offset, uint64_t length) const override {
        if (offset > layout_.size || length > layout_.size - offset)
            throw UsageError("vds view of " + ds_->origin + ": range outside the file");
        std::vector<HeldBytes> pieces;
        uint64_t pos = offset;
        const uint64_t end = offset + length;
        if (pos < end && pos < layout_.prefix_size) {
            const uint64_t n = std::min<uint64_t>(end, layout_.prefix_size) - pos;
            vds::prefix_pieces(layout_, pos, n, pieces);
            pos += n;
        }
        while (pos < end) {
            auto it = std::upper_bound(layout_.objects.begin(), layout_.objects.end(), pos,
                                       [](uint64_t p, const vds::DataObject& o) { return p < o.offset; });
            const vds::DataObject& o = *(it - 1);  // objects are contiguous from prefix_size
            const uint64_t local = pos - o.offset, n = std::min<uint64_t>(end - pos, o.size - local);
            Bytes bytes = object(static_cast<size_t>(it - 1 - layout_.objects.begin()), n);
            const uint8_t* at = bytes->data() + local;
            pieces.push_back({std::move(bytes), at, static_cast<size_t>(n)});
            pos += n;
        }
        return pieces;
    }

private:
    using FlightKey = std::pair<uint64_t, uint64_t>;

    // A batch being made (ObjectCache::in_flight) by this thread or a job:
    // ends however the making leaves, when the last holder lets go.
    class Flight {
    public:
        Flight(FlightKey key, std::promise<void> done, bool ahead) : key_(key), done_(std::move(done)), ahead_(ahead) {}
        ~Flight() {
            {
                ObjectCache& cache = object_cache();
                MutexLock guard(cache.mutex);
                cache.in_flight.erase(key_);
                if (ahead_) --cache.batches_ahead;
            }
            done_.set_value();
        }
        Flight(const Flight&) = delete;
        Flight& operator=(const Flight&) = delete;

    private:
        FlightKey key_;
        std::promise<void> done_;
        bool ahead_;
    };

    // Registers the flight of `key`: nullptr when another thread is making
    // that batch already.
    static std::shared_ptr<Flight> take_off(ObjectCache& cache, FlightKey key, bool ahead) NCAFS_REQUIRES(cache.mutex) {
        auto [it, mine] = cache.in_flight.try_emplace(key);
        if (!mine) return nullptr;
        std::promise<void> done;
        it->second = done.get_future().share();
        if (ahead) cache.most_batches_ahead = std::max(cache.most_batches_ahead, ++cache.batches_ahead);
        return std::make_shared<Flight>(key, std::move(done), ahead);
    }

    FlightKey flight_key(const vds::DataObject& o, vds::ChunkRange batch) const {
        return {id_, uint64_t{o.layer} << 32 | batch.first};
    }

    vds::ChunkRange batch_of(const vds::DataObject& o, bool narrow) const {
        const vds::WrittenLayer& l = layout_.layers[o.layer];
        return vds::batch_of(l.geometry, o.chunk, sample_bytes(l.channel), vds::kBatchBytes, narrow);
    }

    // Object `index` from the cache, else made with the rest of its batch
    // (by this thread, or by the one already making that batch), for a read
    // of `bytes` of it. A reader that reads on has the next batch made
    // meanwhile, in the background.
    Bytes object(size_t index, uint64_t bytes) const {
        const bool streaming = sequential(index, bytes);
        Bytes found = make_or_find(index, !streaming);
        if (streaming) make_next_batch_ahead(index);
        return found;
    }

    Bytes make_or_find(size_t index, bool narrow) const {
        ObjectCache& cache = object_cache();
        const vds::DataObject& o = layout_.objects[index];
        const vds::ChunkRange batch = batch_of(o, narrow);
        const FlightKey key = flight_key(o, batch);
        for (;;) {
            MutexLock lock(cache.mutex);
            if (auto hit = cache.objects.get({id_, index})) return *hit;
            std::shared_ptr<Flight> flight = take_off(cache, key, false);
            if (!flight) {
                const std::shared_future<void> other = cache.in_flight.at(key);
                lock.unlock();
                other.wait();  // then look again (made, or failed: made here)
                continue;
            }
            lock.unlock();
            return make(index, batch, key);
        }
    }

    // Queues the making of the batch after the one of object `index` on the
    // kept worker pool, unless it is cached, being made, failed before, or
    // kBatchesAhead batches (of all views) are being made ahead already:
    // the memory ahead is bounded by that, and the object cache keeps
    // three batches, so the next one does not push out the rest of the
    // current one. A reader that jumps stops asking for it (sequential);
    // a batch made ahead then is only cached. Only for sources read
    // big-endian (classic files: preads into pooled buffers): a netCDF-4
    // batch decompressed on a pool thread raised the peak RSS by 130 MiB
    // (the library's buffers in that thread's malloc arena), for a view
    // that is as fast as its .nc view already.
    void make_next_batch_ahead(size_t index) const {
        const auto& objects = layout_.objects;
        const vds::DataObject& o = objects[index];
        if (read_order(layout_.layers[o.layer].channel) != ByteOrder::Big) return;
        const vds::ChunkRange batch = batch_of(o, false);
        const size_t next = static_cast<size_t>(
            std::lower_bound(objects.begin(), objects.end(), std::make_pair(o.layer, batch.end),
                             [](const vds::DataObject& x, std::pair<uint32_t, uint64_t> at) {
                                 return std::make_pair(x.layer, x.chunk) < at;
                             }) -
            objects.begin());
        if (next >= objects.size()) return;
        const vds::ChunkRange next_batch = batch_of(objects[next], false);
        const FlightKey key = flight_key(objects[next], next_batch);
        ObjectCache& cache = object_cache();
        std::shared_ptr<Flight> flight;
        {
            MutexLock lock(cache.mutex);
            if (cache.batches_ahead >= kBatchesAhead || cache.objects.contains({id_, next}) ||
                cache.failed.contains(key))
                return;
            flight = take_off(cache, key, true);
        }
        if (!flight) return;  // being made
        std::shared_ptr<const VdsView> self = std::static_pointer_cast<const VdsView>(shared_from_this());
        // When the pool refuses the job (or stops before running it), dropping it ends the flight.
        WorkerPool::shared().post([self, flight, next, next_batch, key] {
            try {
                self->make(next, next_batch, key);
            } catch (...) {
                // Not needed by any read yet: the read that needs it makes it and reports the failure.
            }
        });
    }

    // Makes the objects of the batch's data chunks and caches them; when the
    // batch cannot be read (a bad partition), the chunk alone, so that one
    // bad partition fails only the chunks that read it.
    Bytes make(size_t index, vds::ChunkRange batch, const std::pair<uint64_t, uint64_t>& key) const {
        const vds::DataObject& o = layout_.objects[index];
        ObjectCache& cache = object_cache();
        bool failed_before;
        {
            MutexLock lock(cache.mutex);
            failed_before = cache.failed.get(key).has_value();
        }
        if (!failed_before && batch.end - batch.first > 1) {
            try {
                return make_objects(o.layer, batch, index);
            } catch (const std::exception&) {
                MutexLock lock(cache.mutex);
                cache.failed.put(key, true);
            }
        }
        return make_objects(o.layer, {o.chunk, o.chunk + 1}, index);
    }

    Bytes make_objects(uint32_t layer, vds::ChunkRange range, size_t wanted) const {
        auto by_chunk = [](const vds::DataObject& o, std::pair<uint32_t, uint64_t> at) {
            return std::make_pair(o.layer, o.chunk) < at;
        };
        const auto& objects = layout_.objects;
        const size_t first = static_cast<size_t>(
            std::lower_bound(objects.begin(), objects.end(), std::make_pair(layer, range.first), by_chunk) - objects.begin());
        const size_t end = static_cast<size_t>(
            std::lower_bound(objects.begin(), objects.end(), std::make_pair(layer, range.end), by_chunk) - objects.begin());
        std::vector<std::shared_ptr<ObjectBytes>> made;
        for (size_t i = first; i < end; ++i) made.push_back(std::make_shared<ObjectBytes>(objects[i].size));
        const vds::WrittenLayer& l = layout_.layers[layer];
        vds::fill_batch(plan_.layout.channels[l.channel], plan_.channels[l.channel], l.geometry, range,
                        [&](uint64_t chunk) -> uint8_t* {
                            const auto it = std::lower_bound(objects.begin() + first, objects.begin() + end,
                                                             std::make_pair(layer, chunk), by_chunk);
                            if (it == objects.begin() + end || it->chunk != chunk) return nullptr;  // uniform
                            return made[static_cast<size_t>(it - objects.begin()) - first]->data();
                        }, stores_[l.channel].get(), read_order(l.channel));
        ObjectCache& cache = object_cache();
        MutexLock lock(cache.mutex);
        for (size_t i = first; i < end; ++i)
            if (i != wanted) cache.objects.put({id_, i}, made[i - first]);
        cache.objects.put({id_, wanted}, made[wanted - first]);  // last: the most recent
        return made[wanted - first];
    }

    // Whether the reader has read on from object to object for a while
    // (`bytes` of object `index` read now): it gets whole batches, and the
    // next one made ahead; one that jumps gets narrow ones (a netCDF-4
    // source decompresses all of a batch; the kernel asks 128 KiB at a time).
    bool sequential(size_t index, uint64_t bytes) const {
        const size_t last = last_read_.exchange(index);
        if (index > last + kNearObjects || index + kNearObjects < last) {
            streak_.store(0);
            return false;
        }
        return streak_.fetch_add(bytes) + bytes >= kSequentialBytes;
    }

    // The order a channel's source is read in (cheap_order), decided at its
    // first batch: every batch of the channel (its LOD store) uses the same.
    ByteOrder read_order(size_t channel) const {
        ChannelOrder& o = orders_[channel];
        std::call_once(o.once, [&] { o.order = vds::cheap_order(*plan_.channels[channel].source); });
        return o.order;
    }

    uint64_t sample_bytes(size_t channel) const {
        return vds::batch_sample_bytes(plan_.layout.channels[channel], plan_.channels[channel]);
    }

    std::shared_ptr<const Dataset> ds_;
    vds::WriterPlan plan_;
    vds::ContainerLayout layout_;
    uint64_t id_;  // this view's objects in the shared cache
    mutable std::atomic<size_t> last_read_{0};  // the object a read last asked for
    mutable std::atomic<uint64_t> streak_{0};    // bytes of objects read since the last jump
    std::vector<std::unique_ptr<vds::LodStore>> stores_;  // per channel; null: LODs read from the source
    struct ChannelOrder {
        std::once_flag once;
        ByteOrder order = ByteOrder::Native;
    };
    std::unique_ptr<ChannelOrder[]> orders_{new ChannelOrder[plan_.channels.size()]};  // per channel
};

}  // namespace

BatchesAhead vds_batches_ahead() {
    ObjectCache& cache = object_cache();
    MutexLock lock(cache.mutex);
    return {cache.batches_ahead, cache.most_batches_ahead};
}

std::optional<std::string> vds_view_refusal(const Dataset& dataset, int lods) {
    std::string why;
    // Chunk counts do not depend on coordinate values: none is read (a
    // listing must not read data, let alone fetch it from a server).
    const auto plan = vds::plan_vds(dataset, lods, &why, [](const ArraySource&) { return false; });
    if (!plan) return dataset.origin + ": no .vds view: " + why;
    if (vds::view_chunk_count(*plan) > vds::kMaxViewChunks)
        return dataset.origin + ": no .vds view: more than " + std::to_string(vds::kMaxViewChunks) + " chunks";
    // The lookup would refuse it for its memory (io/metadata_budget.hpp): not listed either.
    if (const uint64_t bytes = vds::container_memory(*plan); bytes > metadata_limits().per_file)
        return dataset.origin + ": no .vds view: its layers and index entries would take " + std::to_string(bytes) +
               " bytes of memory, more than max_file_metadata_mem=" + std::to_string(metadata_limits().per_file);
    return std::nullopt;
}

std::shared_ptr<const VirtualFile> make_vds_view(std::shared_ptr<const Dataset> dataset,
                                                 const VdsViewOptions& options) {
    if (!dataset) throw UsageError("make_vds_view: no dataset");
    std::string why;
    auto plan = vds::plan_vds(*dataset, options.lods, &why, options.may_read_coordinates);
    if (!plan) throw UsageError(dataset->origin + ": no .vds view: " + why);
    if (options.note)
        for (const auto& o : plan->omitted) options.note(dataset->origin + ": left out of the .vds view: " + o);
    return std::make_shared<VdsView>(std::move(dataset), std::move(*plan));
}

}  // namespace ncafs
