#include "codecs/vds/vds_writer_chunks.hpp"

#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::vds {
namespace {

// netCDF-order (start, count) of the LOD0 box.
void netcdf_box(const ChunkBox& box, std::vector<uint64_t>& start, std::vector<uint64_t>& count) {
    const size_t rank = box.lo.size();
    start.resize(rank);
    count.resize(rank);
    for (size_t k = 0; k < rank; ++k) {
        start[k] = static_cast<uint64_t>(box.lo[rank - 1 - k]);
        count[k] = static_cast<uint64_t>(box.hi[rank - 1 - k] - box.lo[rank - 1 - k]);
    }
}

}  // namespace

ChunkBox chunk_box(const LayerGeometry& g, uint64_t index) {
    ChunkBox b;
    for (size_t d = 0; d < g.rank(); ++d) {
        const int64_t i = static_cast<int64_t>(index % static_cast<uint64_t>(g.chunks[d]));
        index /= static_cast<uint64_t>(g.chunks[d]);
        b.lo.push_back(g.chunk_lo(static_cast<int>(d), i));
        b.hi.push_back(g.chunk_hi(static_cast<int>(d), i));
        b.stored.push_back(g.stored(static_cast<int>(d), i));
    }
    return b;
}

size_t format_size(Format f) {
    switch (f) {
        case Format::U8: return 1;
        case Format::U16: return 2;
        case Format::R32:
        case Format::U32: return 4;
        default: return 8;
    }
}

uint64_t chunk_object_size(Format f, const ChunkBox& box) {
    uint64_t n = 1;
    for (int64_t s : box.stored) n *= static_cast<uint64_t>(s);
    return 24 + n * format_size(f);
}

std::optional<uint64_t> uniform_chunk_hash(const Channel& c, const WriterChannel& w, const ArraySource& src,
                                           const ChunkBox& box) {
    std::vector<uint64_t> start, count;
    netcdf_box(box, start, count);
    const auto u = src.uniform_value(start, count);
    if (!u || u->size() != type_size(w.source_type)) return std::nullopt;
    if (w.fill && *u == *w.fill) return kNoValueHash;
    const double v = element_as_double(w.source_type, u->data(), 0);
    // The hash holds a float32 (notes §2.7): only values that survive it; a
    // U8/U16 value on the NoValue code would read back as missing.
    const float f = static_cast<float>(v);
    if (static_cast<double>(f) != v) return std::nullopt;
    if (quantized(c.format) && c.use_no_value && v - static_cast<double>(c.offset) == static_cast<double>(top_code(c.format)))
        return std::nullopt;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return kConstantTag | bits;
}

}  // namespace ncafs::vds
