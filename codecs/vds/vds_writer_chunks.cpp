#include "codecs/vds/vds_writer_chunks.hpp"

#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::vds {
namespace {

bool quantized(Format f) { return f == Format::U8 || f == Format::U16; }
uint64_t top_code(Format f) { return f == Format::U8 ? 0xFF : 0xFFFF; }

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

template <typename T>
void put(uint8_t* dst, size_t i, T v) {
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
}

// Source elements -> stored samples: signed types shifted onto the unsigned
// codes, int widened to double, fill elements -> the NoValue code (U8/U16)
// or the float32 noValue (R64: what a reader compares against).
void convert(const Channel& c, const WriterChannel& w, const uint8_t* src, size_t n, uint8_t* dst) {
    const size_t es = type_size(w.source_type);
    for (size_t i = 0; i < n; ++i) {
        const uint8_t* e = src + i * es;
        const bool is_fill = w.fill && std::memcmp(e, w.fill->data(), es) == 0;
        switch (c.format) {
            case Format::U8:
            case Format::U16: {
                const double q = element_as_double(w.source_type, e, 0) - static_cast<double>(c.offset);
                const uint64_t code = is_fill ? top_code(c.format) : static_cast<uint64_t>(q);
                if (c.format == Format::U8) put(dst, i, static_cast<uint8_t>(code));
                else put(dst, i, static_cast<uint16_t>(code));
                break;
            }
            case Format::R64: {
                const double v = is_fill ? static_cast<double>(c.no_value) : element_as_double(w.source_type, e, 0);
                put(dst, i, v);
                break;
            }
            default:  // R32, U32, U64: the source bytes as they are
                std::memcpy(dst + i * es, e, es);
        }
    }
}

// Elements one read may bring in for a decimated chunk (16 MiB of doubles):
// the trailing dims that fit are read whole, the others one sample per read.
constexpr uint64_t kScratchElements = uint64_t{1} << 21;

// Copies every step-th element of a C-order block of extents `ext` (dims
// from `first` on) into out, densely.
void decimate(const uint8_t* block, const std::vector<uint64_t>& ext, const std::vector<uint64_t>& stored,
              size_t first, uint64_t step, size_t es, uint8_t* out) {
    const size_t rank = ext.size();
    std::vector<uint64_t> idx(rank, 0);
    uint64_t n = 1;
    for (size_t k = first; k < rank; ++k) n *= stored[k];
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t at = 0;
        for (size_t k = first; k < rank; ++k) at = at * ext[k] + idx[k] * step;
        std::memcpy(out + i * es, block + at * es, es);
        for (size_t k = rank; k-- > first;) {
            if (++idx[k] < stored[k]) break;
            idx[k] = 0;
        }
    }
}

// Reads the samples of the box at LOD `shift` (every 2^shift-th along every
// dim) in netCDF C order: few reads (one at LOD0), bounded scratch memory.
std::vector<uint8_t> read_samples(const ArraySource& src, NcType type, const ChunkBox& box, int shift) {
    std::vector<uint64_t> start, count;
    netcdf_box(box, start, count);
    const size_t rank = start.size(), es = type_size(type);
    const uint64_t step = uint64_t{1} << shift;
    std::vector<uint64_t> stored(rank), ext(rank);
    uint64_t total = 1;
    for (size_t k = 0; k < rank; ++k) {
        stored[k] = static_cast<uint64_t>(box.stored[rank - 1 - k]);
        ext[k] = (stored[k] - 1) * step + 1;  // <= count[k]
        total *= stored[k];
    }
    std::vector<uint8_t> out(total * es);
    size_t lead = rank - 1;  // dims [lead, rank) read whole; a row is <= 255 * 4096 + 1 elements
    uint64_t block = ext[rank - 1], inner = stored[rank - 1];
    while (lead > 0 && block * ext[lead - 1] <= kScratchElements) block *= ext[lead - 1], inner *= stored[--lead];
    std::vector<uint64_t> rstart = start, rcount(rank, 1), m(lead, 0);
    for (size_t k = lead; k < rank; ++k) rcount[k] = ext[k];
    std::vector<uint8_t> scratch(step == 1 ? 0 : block * es);
    for (uint64_t b = 0; b < total / inner; ++b) {
        for (size_t k = 0; k < lead; ++k) rstart[k] = start[k] + m[k] * step;
        uint8_t* dst = out.data() + b * inner * es;
        src.read(rstart, rcount, ByteOrder::Native, step == 1 ? dst : scratch.data());
        if (step != 1) decimate(scratch.data(), ext, stored, lead, step, es, dst);
        for (size_t k = lead; k-- > 0;) {  // next block: odometer over the leading dims
            if (++m[k] < stored[k]) break;
            m[k] = 0;
        }
    }
    return out;
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

void serialize_chunk(const Channel& c, const WriterChannel& w, const ArraySource& src, const LayerGeometry& g,
                     const ChunkBox& box, uint8_t* out) {
    int32_t descriptor[6] = {static_cast<int32_t>(g.group.size()), 1, 1, 1, static_cast<int32_t>(c.format), 1};
    for (size_t j = 0; j < g.group.size(); ++j) descriptor[1 + j] = static_cast<int32_t>(box.stored[g.group[j]]);
    std::memcpy(out, descriptor, sizeof descriptor);
    const std::vector<uint8_t> samples = read_samples(src, w.source_type, box, g.lod);
    convert(c, w, samples.data(), samples.size() / type_size(w.source_type), out + 24);
}

}  // namespace ncafs::vds
