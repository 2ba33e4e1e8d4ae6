#include "codecs/vds/vds_lod_store.hpp"

#include <cstring>

namespace ncafs::vds {
namespace {

std::atomic<uint64_t> g_reserved{0};

// A box of the C-order array src (extents src_ext), from src_at with a step
// per dim, `count` elements per dim, to dst (extents dst_ext) at dst_at.
struct BoxCopy {
    std::vector<uint64_t> src_ext, src_at, src_step, dst_ext, dst_at, count;
};

void copy_box(const BoxCopy& b, const uint8_t* src, uint8_t* dst, size_t es) {
    const size_t rank = b.count.size(), last = rank - 1;
    for (uint64_t c : b.count)
        if (c == 0) return;
    std::vector<uint64_t> src_stride(rank, 1), dst_stride(rank, 1), idx(rank, 0);
    for (size_t k = last; k-- > 0;) {
        src_stride[k] = src_stride[k + 1] * b.src_ext[k + 1];
        dst_stride[k] = dst_stride[k + 1] * b.dst_ext[k + 1];
    }
    const uint64_t step = b.src_step[last] * es;
    for (;;) {
        uint64_t s = b.src_at[last], d = b.dst_at[last];
        for (size_t k = 0; k < last; ++k) {
            s += (b.src_at[k] + idx[k] * b.src_step[k]) * src_stride[k];
            d += (b.dst_at[k] + idx[k]) * dst_stride[k];
        }
        const uint8_t* from = src + s * es;
        uint8_t* to = dst + d * es;
        if (step == es) std::memcpy(to, from, b.count[last] * es);
        else
            for (uint64_t i = 0; i < b.count[last]; ++i) std::memcpy(to + i * es, from + i * step, es);
        size_t k = last;
        while (k-- > 0) {
            if (++idx[k] < b.count[k]) break;
            idx[k] = 0;
        }
        if (k == SIZE_MAX) return;
    }
}

uint64_t level_elements(const LayerGeometry& g) {
    uint64_t n = 1;
    for (size_t d = 0; d < g.rank(); ++d) n *= static_cast<uint64_t>(g.lod_samples(static_cast<int>(d)));
    return n;
}

}  // namespace

std::unique_ptr<LodStore> LodStore::make(std::vector<LayerGeometry> layers, size_t es) {
    if (layers.size() < 2) return nullptr;
    uint64_t bytes = 0;
    for (size_t n = 1; n < layers.size(); ++n) bytes += level_elements(layers[n]) * es;  // < LOD0 bytes
    uint64_t reserved = g_reserved.load();
    do {
        if (bytes > kLodStoreBudget - reserved) return nullptr;
    } while (!g_reserved.compare_exchange_weak(reserved, reserved + bytes));
    return std::unique_ptr<LodStore>(new LodStore(std::move(layers), es, bytes));
}

LodStore::LodStore(std::vector<LayerGeometry> layers, size_t es, uint64_t bytes)
    : layers_(std::move(layers)), es_(es), bytes_(bytes), kept_(layers_[0].chunk_count, false) {
    for (size_t n = 1; n < layers_.size(); ++n) levels_.emplace_back(level_elements(layers_[n]) * es_);
}

LodStore::~LodStore() { g_reserved -= bytes_; }

void LodStore::keep(uint64_t first, uint64_t end, const ChunkBox& box, const uint8_t* samples) {
    const size_t rank = box.lo.size();
    MutexLock lock(mutex_);
    for (size_t n = 1; n < layers_.size(); ++n) {
        const LayerGeometry& g = layers_[n];
        BoxCopy b;
        for (size_t k = 0; k < rank; ++k) {  // netCDF dim k = VDS dim rank-1-k
            const size_t d = rank - 1 - k;
            const int64_t step = int64_t{1} << g.shift[d];
            const int64_t p0 = (box.lo[d] + step - 1) / step * step;  // first kept LOD0 position
            b.src_ext.push_back(static_cast<uint64_t>(box.hi[d] - box.lo[d]));
            b.src_at.push_back(static_cast<uint64_t>(p0 - box.lo[d]));
            b.src_step.push_back(static_cast<uint64_t>(step));
            b.dst_ext.push_back(static_cast<uint64_t>(g.lod_samples(static_cast<int>(d))));
            b.dst_at.push_back(static_cast<uint64_t>(p0 >> g.shift[d]));
            b.count.push_back(p0 < box.hi[d] ? static_cast<uint64_t>((box.hi[d] - 1 - p0) / step + 1) : 0);
        }
        copy_box(b, samples, levels_[n - 1].data(), es_);
    }
    for (uint64_t c = first; c < end; ++c) kept_[c] = true;
}

bool LodStore::all_kept(const ChunkBox& box) const {
    const LayerGeometry& g0 = layers_[0];
    const size_t rank = box.lo.size();
    std::vector<int64_t> lo(rank), hi(rank), at(rank);
    for (size_t d = 0; d < rank; ++d) {
        lo[d] = at[d] = box.lo[d] / g0.stride[d];
        hi[d] = (box.hi[d] + g0.stride[d] - 1) / g0.stride[d];
    }
    for (;;) {
        uint64_t index = 0;
        for (size_t d = rank; d-- > 0;) index = index * static_cast<uint64_t>(g0.chunks[d]) + static_cast<uint64_t>(at[d]);
        if (!kept_[index]) return false;
        size_t d = 0;
        for (; d < rank; ++d) {
            if (++at[d] < hi[d]) break;
            at[d] = lo[d];
        }
        if (d == rank) return true;
    }
}

bool LodStore::take(int lod, const ChunkBox& box, uint8_t* out) const {
    if (lod < 1 || static_cast<size_t>(lod) >= layers_.size()) return false;
    const LayerGeometry& g = layers_[static_cast<size_t>(lod)];
    const size_t rank = box.lo.size();
    MutexLock lock(mutex_);
    if (!all_kept(box)) return false;
    BoxCopy b;
    for (size_t k = 0; k < rank; ++k) {
        const size_t d = rank - 1 - k;
        b.src_ext.push_back(static_cast<uint64_t>(g.lod_samples(static_cast<int>(d))));
        b.src_at.push_back(static_cast<uint64_t>(box.lo[d] >> g.shift[d]));
        b.src_step.push_back(1);
        b.dst_ext.push_back(static_cast<uint64_t>(box.stored[d]));
        b.dst_at.push_back(0);
        b.count.push_back(static_cast<uint64_t>(box.stored[d]));
    }
    copy_box(b, levels_[static_cast<size_t>(lod) - 1].data(), out, es_);
    return true;
}

}  // namespace ncafs::vds
