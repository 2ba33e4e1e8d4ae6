#include "codecs/vds/vds_geometry.hpp"

#include <algorithm>

namespace ncafs::vds {
namespace {

int64_t ceil_shift(int64_t x, int s) { return (x + (int64_t{1} << s) - 1) >> s; }

}  // namespace

bool decimated(const Layout& layout, int d) { return d != layout.full_resolution_dimension; }

bool LayerGeometry::in_group(int d) const { return std::find(group.begin(), group.end(), d) != group.end(); }

int64_t LayerGeometry::chunk_hi(int d, int64_t i) const {
    return std::min((i + 1) * stride[d] + negative[d] + positive[d], samples[d]);
}

int64_t LayerGeometry::chunk_of(int d, int64_t x) const {
    if (x < negative[d]) return 0;
    return std::min((x - negative[d]) / stride[d], chunks[d] - 1);
}

int64_t LayerGeometry::valid_first(int d, int64_t i) const {
    return i == 0 ? 0 : ceil_shift(i * stride[d] + negative[d], view_shift[d]);
}

int64_t LayerGeometry::valid_end(int d, int64_t i) const {
    if (i == chunks[d] - 1) return view_samples(d);
    return ceil_shift((i + 1) * stride[d] + negative[d], view_shift[d]);
}

LayerGeometry make_geometry(const Layout& layout, const std::vector<int>& group, int lod) {
    LayerGeometry g;
    g.group = group;
    g.lod = lod;
    const int64_t brick = int64_t{1} << layout.brick_log2;
    const int64_t interior = brick - layout.negative_margin - layout.positive_margin;
    const int64_t internal = group.size() == 2 ? interior * layout.multiplier_2d : interior;
    for (size_t d = 0; d < layout.axes.size(); ++d) {
        const int64_t n = layout.axes[d].samples;  // <= 2^31
        const bool inside = g.in_group(static_cast<int>(d));
        const int v = decimated(layout, static_cast<int>(d)) ? lod : 0;
        const int s = inside ? v : 0;
        const int64_t nm = inside ? layout.negative_margin : 0, pm = inside ? layout.positive_margin : 0;
        // Outside the group: bricks of one sample at every LOD (nChunks = N).
        const int64_t stride = inside ? std::min(internal << s, n) : 1;  // internal < 2^22, s <= 12
        // C++ truncating division (toward zero) as OpenVDS, clamped to >= 1.
        const int64_t chunks = std::max<int64_t>((n - 1 - nm - pm) / stride + 1, 1);
        g.samples.push_back(n);
        g.shift.push_back(s);
        g.view_shift.push_back(v);
        g.stride.push_back(stride);
        g.chunks.push_back(chunks);
        g.negative.push_back(nm);
        g.positive.push_back(pm);
        // Saturates: the caller compares it with the container's chunk count.
        if (__builtin_mul_overflow(g.chunk_count, static_cast<uint64_t>(chunks), &g.chunk_count)) g.chunk_count = UINT64_MAX;
    }
    return g;
}

}  // namespace ncafs::vds
