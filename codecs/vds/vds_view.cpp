#include "codecs/vds/vds_view.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "codecs/error.hpp"
#include "io/lru_cache.hpp"
#include "codecs/vds/vds_writer_chunks.hpp"
#include "codecs/vds/vds_writer_container.hpp"

namespace ncafs {
namespace {

using Bytes = std::shared_ptr<const std::vector<uint8_t>>;
// Sequential reads of a few KiB each hit the same chunk object many times.
constexpr size_t kObjectCacheBytes = 16 << 20;

class VdsView final : public VirtualFile {
public:
    VdsView(std::shared_ptr<const Dataset> ds, vds::WriterPlan plan)
        : ds_(std::move(ds)), plan_(std::move(plan)), layout_(vds::build_container(plan_)) {}

    uint64_t size() const override { return layout_.size; }

    void read(uint64_t offset, std::span<uint8_t> out) const override {
        if (offset > layout_.size || out.size() > layout_.size - offset)
            throw UsageError("vds view of " + ds_->origin + ": range outside the file");
        uint64_t pos = offset, done = 0;
        if (pos < layout_.prefix.size()) {
            const uint64_t n = std::min<uint64_t>(out.size(), layout_.prefix.size() - pos);
            std::memcpy(out.data(), layout_.prefix.data() + pos, n);
            pos += n, done += n;
        }
        while (done < out.size()) {
            auto it = std::upper_bound(layout_.objects.begin(), layout_.objects.end(), pos,
                                       [](uint64_t p, const vds::DataObject& o) { return p < o.offset; });
            const vds::DataObject& o = *(it - 1);  // objects are contiguous from prefix.size()
            const Bytes bytes = object(static_cast<size_t>(it - 1 - layout_.objects.begin()));
            const uint64_t local = pos - o.offset, n = std::min<uint64_t>(out.size() - done, o.size - local);
            std::memcpy(out.data() + done, bytes->data() + local, n);
            pos += n, done += n;
        }
    }

private:
    Bytes object(size_t index) const {
        {
            std::lock_guard lock(mutex_);
            if (auto hit = cache_.get(index)) return *hit;
        }
        const vds::DataObject& o = layout_.objects[index];
        const vds::WrittenLayer& l = layout_.layers[o.layer];
        auto bytes = std::make_shared<std::vector<uint8_t>>(o.size);
        const vds::WriterChannel& w = plan_.channels[l.channel];
        vds::serialize_chunk(plan_.layout.channels[l.channel], w, *w.source, l.geometry,
                             vds::chunk_box(l.geometry, o.chunk), bytes->data());
        std::lock_guard lock(mutex_);
        cache_.put(index, bytes);
        return bytes;
    }

    std::shared_ptr<const Dataset> ds_;
    vds::WriterPlan plan_;
    vds::ContainerLayout layout_;
    mutable std::mutex mutex_;  // guards cache_; lock order: a leaf (chunks are computed outside it)
    mutable LruCache<size_t, Bytes, std::hash<size_t>, ByteWeight> cache_{kObjectCacheBytes};
};

}  // namespace

std::optional<std::string> vds_view_refusal(const Dataset& dataset, int lods) {
    std::string why;
    // Chunk counts do not depend on coordinate values: none is read (a
    // listing must not read data, let alone fetch it from a server).
    const auto plan = vds::plan_vds(dataset, lods, &why, [](const ArraySource&) { return false; });
    if (!plan) return dataset.origin + ": no .vds view: " + why;
    if (vds::view_chunk_count(*plan) > vds::kMaxViewChunks)
        return dataset.origin + ": no .vds view: more than " + std::to_string(vds::kMaxViewChunks) + " chunks";
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
