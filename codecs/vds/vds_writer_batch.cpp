#include "codecs/vds/vds_writer_batch.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/error.hpp"
#include "codecs/vds/vds_buffer_pool.hpp"

namespace ncafs::vds {
namespace {

using Wide = unsigned __int128;  // products of sizes that may pass 2^64

template <typename T>
void put(uint8_t* dst, size_t i, T v) {
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
}

// n source elements in `order` -> native: a row at a time, in the cache,
// instead of a pass over the whole batch.
void copy_native(NcType type, const uint8_t* src, size_t n, ByteOrder order, uint8_t* dst) {
    if (order == ByteOrder::Big) return copy_swapped_from_big_endian(type, src, dst, n);
    std::memcpy(dst, src, n * type_size(type));
}

// Source elements (in `order`) -> stored samples: signed types shifted onto
// the unsigned codes, int widened to double, fill elements -> the NoValue
// code (U8/U16) or the float32 noValue (R64: what a reader compares
// against). R32, U32 and U64 keep the source values as they are.
void convert(const Channel& c, const WriterChannel& w, const uint8_t* src, size_t n, ByteOrder order, uint8_t* dst) {
    const size_t es = type_size(w.source_type);
    if (!quantized(c.format) && c.format != Format::R64) return copy_native(w.source_type, src, n, order, dst);
    if (c.format == Format::R64 && w.source_type == NcType::Double && !w.fill)
        return copy_native(w.source_type, src, n, order, dst);
    for (size_t i = 0; i < n; ++i) {
        uint8_t e[8];  // the element, native
        copy_native(w.source_type, src + i * es, 1, order, e);
        const bool is_fill = w.fill && std::memcmp(e, w.fill->data(), es) == 0;
        if (c.format == Format::R64) {
            put(dst, i, is_fill ? static_cast<double>(c.no_value) : element_as_double(w.source_type, e, 0));
            continue;
        }
        const double q = element_as_double(w.source_type, e, 0) - static_cast<double>(c.offset);
        const uint64_t code = is_fill ? top_code(c.format) : static_cast<uint64_t>(q);
        if (c.format == Format::U8) put(dst, i, static_cast<uint8_t>(code));
        else put(dst, i, static_cast<uint16_t>(code));
    }
}

// Chunk coordinates of a chunk index (dim 0 fastest).
std::vector<int64_t> coordinates(const LayerGeometry& g, uint64_t chunk) {
    std::vector<int64_t> at(g.rank());
    for (size_t d = 0; d < g.rank(); ++d) {
        at[d] = static_cast<int64_t>(chunk % static_cast<uint64_t>(g.chunks[d]));
        chunk /= static_cast<uint64_t>(g.chunks[d]);
    }
    return at;
}

// The LOD0 box of chunks [first, end) (a box: see batch_of), samples stored per dim.
ChunkBox range_box(const LayerGeometry& g, ChunkRange r) {
    const ChunkBox a = chunk_box(g, r.first), b = chunk_box(g, r.end - 1);
    ChunkBox box{a.lo, b.hi, {}};
    for (size_t d = 0; d < g.rank(); ++d) box.stored.push_back(((box.hi[d] - box.lo[d] - 1) >> g.shift[d]) + 1);
    return box;
}

// A box in netCDF order (dim k = VDS dim rank-1-k): LOD0 start and count,
// the decimation step and the samples kept.
struct BoxRead {
    std::vector<uint64_t> start, count, step, stored;
};

BoxRead box_read(const LayerGeometry& g, const ChunkBox& box) {
    BoxRead r;
    for (size_t k = 0; k < g.rank(); ++k) {
        const size_t d = g.rank() - 1 - k;
        r.start.push_back(static_cast<uint64_t>(box.lo[d]));
        r.count.push_back(static_cast<uint64_t>(box.hi[d] - box.lo[d]));
        r.step.push_back(uint64_t{1} << g.shift[d]);
        r.stored.push_back(static_cast<uint64_t>(box.stored[d]));
    }
    return r;
}

// n elements every `stride` bytes -> dense.
void copy_strided(const uint8_t* src, uint64_t stride, uint64_t n, size_t es, uint8_t* dst) {
    if (stride == es) return (void)std::memcpy(dst, src, n * es);
    for (uint64_t i = 0; i < n; ++i) std::memcpy(dst + i * es, src + i * stride, es);
}

// The kept samples of a block read whole over dims [lead, rank) (extents
// r.count), densely into out.
void decimate(const uint8_t* block, const BoxRead& r, size_t lead, size_t es, uint8_t* out) {
    const size_t rank = r.count.size(), last = rank - 1;
    std::vector<uint64_t> stride(rank, 1);  // elements, C order over [lead, rank)
    for (size_t k = last; k-- > lead;) stride[k] = stride[k + 1] * r.count[k + 1];
    uint64_t rows = 1;
    for (size_t k = lead; k < last; ++k) rows *= r.stored[k];
    std::vector<uint64_t> idx(rank, 0);
    for (uint64_t row = 0; row < rows; ++row) {
        uint64_t at = 0;
        for (size_t k = lead; k < last; ++k) at += idx[k] * r.step[k] * stride[k];
        copy_strided(block + at * es, r.step[last] * es, r.stored[last], es, out);
        out += r.stored[last] * es;
        for (size_t k = last; k-- > lead;) {
            if (++idx[k] < r.stored[k]) break;
            idx[k] = 0;
        }
    }
}

uint64_t stored_count(const BoxRead& r) {
    uint64_t total = 1;
    for (uint64_t s : r.stored) total *= s;
    return total;
}

// The kept samples of the box in netCDF C order into out (stored_count
// elements). LOD0: one read. Decimated: the fastest dims whose LOD0 block
// fits kBatchBytes (the last one always: batch_of keeps its row inside the
// budget) read whole, one read per kept index of the slower dims.
void read_box(const ArraySource& src, size_t es, const BoxRead& r, ByteOrder order, uint8_t* out) {
    const size_t rank = r.count.size();
    const uint64_t total = stored_count(r);
    if (std::all_of(r.step.begin(), r.step.end(), [](uint64_t s) { return s == 1; }))
        return src.read(r.start, r.count, order, out);
    size_t lead = rank;
    uint64_t block = 1, inner = 1;
    while (lead > 0 && (lead == rank || Wide{block} * r.count[lead - 1] * es <= kBatchBytes))
        --lead, block *= r.count[lead], inner *= r.stored[lead];
    const PooledBuffer scratch(block * es);
    std::vector<uint64_t> start = r.start, count(rank, 1), m(lead, 0);
    for (size_t k = lead; k < rank; ++k) count[k] = r.count[k];
    for (uint64_t b = 0; b < total / inner; ++b) {
        for (size_t k = 0; k < lead; ++k) start[k] = r.start[k] + m[k] * r.step[k];
        src.read(start, count, order, scratch.data());
        decimate(scratch.data(), r, lead, es, out + b * inner * es);
        for (size_t k = lead; k-- > 0;) {  // odometer over the kept indices of the slow dims
            if (++m[k] < r.stored[k]) break;
            m[k] = 0;
        }
    }
}

void write_descriptor(const Channel& c, const LayerGeometry& g, const ChunkBox& box, uint8_t* out) {
    int32_t descriptor[6] = {static_cast<int32_t>(g.group.size()), 1, 1, 1, static_cast<int32_t>(c.format), 1};
    for (size_t j = 0; j < g.group.size(); ++j) descriptor[1 + j] = static_cast<int32_t>(box.stored[g.group[j]]);
    std::memcpy(out, descriptor, sizeof descriptor);
}

// A chunk to copy out of the batch: its object (after the descriptor) and
// where its rows start in the batch (netCDF order, stored units from `all`).
struct ChunkOut {
    uint8_t* samples = nullptr;
    uint64_t first_column = 0;  // along the fastest dim
    uint64_t columns = 0;       // samples per row
};

// Copies chunks that lie side by side along the fastest dim (the same rows
// of the batch: `box` of any of them) out of the batch samples (netCDF C
// order over `all`, in `order`), converted: row by row of the batch, each
// row split between the chunks, so that the batch is read in order.
void write_side_by_side(const Channel& c, const WriterChannel& w, const LayerGeometry& g, const ChunkBox& all,
                        const uint8_t* samples, ByteOrder order, const ChunkBox& box, const std::vector<ChunkOut>& outs) {
    const size_t rank = g.rank(), es = type_size(w.source_type), fs = format_size(c.format);
    std::vector<uint64_t> off(rank), n(rank), stride(rank, 1);  // netCDF order
    for (size_t k = 0; k < rank; ++k) {
        const size_t d = rank - 1 - k;
        off[k] = static_cast<uint64_t>((box.lo[d] - all.lo[d]) >> g.shift[d]);
        n[k] = static_cast<uint64_t>(box.stored[d]);
    }
    for (size_t k = rank - 1; k-- > 0;) stride[k] = stride[k + 1] * static_cast<uint64_t>(all.stored[rank - 2 - k]);
    uint64_t rows = 1;
    for (size_t k = 0; k + 1 < rank; ++k) rows *= n[k];
    std::vector<uint64_t> idx(rank, 0);
    for (uint64_t row = 0; row < rows; ++row) {
        uint64_t at = 0;
        for (size_t k = 0; k + 1 < rank; ++k) at += (off[k] + idx[k]) * stride[k];
        for (const ChunkOut& o : outs)
            convert(c, w, samples + (at + o.first_column) * es, o.columns, order, o.samples + row * o.columns * fs);
        for (size_t k = rank - 1; k-- > 0;) {
            if (++idx[k] < n[k]) break;
            idx[k] = 0;
        }
    }
}

// Writes the object of every wanted chunk of `range`: descriptors, then the
// samples of each run of chunks along the fastest dim together.
void write_chunks(const Channel& c, const WriterChannel& w, const LayerGeometry& g, const ChunkBox& all,
                  const uint8_t* samples, ByteOrder order, ChunkRange range, const ObjectDestination& object_of) {
    const uint64_t along = static_cast<uint64_t>(g.chunks[0]);
    std::vector<ChunkOut> outs;
    for (uint64_t chunk = range.first; chunk < range.end;) {
        const uint64_t run_end = std::min(range.end, (chunk / along + 1) * along);  // the same slower coordinates
        const ChunkBox box = chunk_box(g, chunk);
        outs.clear();
        for (; chunk < run_end; ++chunk) {
            uint8_t* out = object_of(chunk);
            if (!out) continue;  // uniform
            const ChunkBox b = chunk_box(g, chunk);
            write_descriptor(c, g, b, out);
            outs.push_back({out + 24, static_cast<uint64_t>((b.lo[0] - all.lo[0]) >> g.shift[0]),
                            static_cast<uint64_t>(b.stored[0])});
        }
        if (!outs.empty()) write_side_by_side(c, w, g, all, samples, order, box, outs);
    }
}

}  // namespace

uint64_t batch_sample_bytes(const Channel& c, const WriterChannel& w) {
    return std::max<uint64_t>(type_size(w.source_type), format_size(c.format));
}

ChunkRange batch_of(const LayerGeometry& g, uint64_t chunk, uint64_t sample_bytes, uint64_t budget, bool narrow) {
    const size_t rank = g.rank();
    const std::vector<int64_t> at = coordinates(g, chunk);
    // Samples along d of the whole layer, of this chunk, of an interior
    // chunk; along dim 0 in LOD0 units (its rows are read whole, then decimated).
    auto whole = [&](size_t d) -> Wide { return static_cast<uint64_t>(d == 0 ? g.samples[0] : g.lod_samples(int(d))); };
    auto own = [&](size_t d) -> Wide {
        const int i = static_cast<int>(d);
        return static_cast<uint64_t>(d == 0 ? g.chunk_hi(0, at[0]) - g.chunk_lo(0, at[0]) : g.stored(i, at[d]));
    };
    auto interior = [&](size_t d) -> Wide { return static_cast<uint64_t>(d == 0 ? g.stride[0] : g.stride[d] >> g.shift[d]); };
    auto above = [&](size_t from) {
        Wide p = 1;
        for (size_t d = from; d < rank; ++d) p *= own(d);  // < 2^40: the products below stay far under 2^128
        return p;
    };
    Wide below = sample_bytes;  // bytes of dims [0, j) whole
    size_t j = 0;
    while (j < rank && below * whole(j) * above(j + 1) <= budget) below *= whole(j++);
    if (j == rank) return {0, g.chunk_count};
    const Wide per = below * interior(j) * above(j + 1);
    const int64_t k = narrow ? 1 : static_cast<int64_t>(std::clamp<Wide>(budget / per, 1, static_cast<uint64_t>(g.chunks[j])));
    const int64_t a = at[j] / k * k, b = std::min(a + k, g.chunks[j]);
    std::vector<uint64_t> weight(rank, 1);  // index step of one chunk along d
    for (size_t d = 1; d < rank; ++d) weight[d] = weight[d - 1] * static_cast<uint64_t>(g.chunks[d - 1]);
    uint64_t base = 0;
    for (size_t d = j + 1; d < rank; ++d) base += static_cast<uint64_t>(at[d]) * weight[d];
    return {base + static_cast<uint64_t>(a) * weight[j], base + static_cast<uint64_t>(b) * weight[j]};
}

ByteOrder cheap_order(const ArraySource& source) {
    if (source.element_count() == 0) return ByteOrder::Native;
    try {
        return source.big_endian_extents(0, 1) ? ByteOrder::Big : ByteOrder::Native;
    } catch (const SourceError&) {
        return ByteOrder::Native;  // the batch's read says what is wrong
    }
}

void fill_batch(const Channel& c, const WriterChannel& w, const LayerGeometry& g, ChunkRange range,
                const ObjectDestination& object_of, LodStore* store, ByteOrder order) {
    const ChunkBox all = range_box(g, range);
    const BoxRead r = box_read(g, all);
    const size_t es = type_size(w.source_type);
    const PooledBuffer samples(stored_count(r) * es);
    if (!store || !store->take(g.lod, all, samples.data())) read_box(*w.source, es, r, order, samples.data());
    if (store && g.lod == 0) store->keep(range.first, range.end, all, samples.data());
    write_chunks(c, w, g, all, samples.data(), order, range, object_of);
}

}  // namespace ncafs::vds
