#include "codecs/vds/vds_layer_source.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "codecs/error.hpp"
#include "codecs/vds/vds_chunk_cache.hpp"

namespace ncafs::vds {

// The requested box in VDS dim order and LOD index units: [first, end).
struct VdsLayerSource::Box {
    std::vector<int64_t> first, end;
    std::vector<uint64_t> out_stride;  // elements, per VDS dim
};

NcType nc_type_of(Format f) {
    switch (f) {
        case Format::Bit1: case Format::U8: return NcType::UByte;
        case Format::U16: return NcType::UShort;
        case Format::R32: return NcType::Float;
        case Format::U32: return NcType::UInt;
        case Format::R64: return NcType::Double;
        case Format::U64: return NcType::UInt64;
    }
    return NcType::Float;
}

namespace {

// OpenVDS's quantisation of a float to a U8/U16 code (float32 arithmetic,
// round half up, clamped below the NoValue code when it is reserved).
uint64_t quantise(const Channel& c, float v, uint64_t top) {
    const uint64_t max = c.use_no_value ? top - 1 : top;
    const float q = (v - c.offset) / c.scale + 0.5f;
    if (!(q > 0)) return 0;
    if (q >= static_cast<float>(max)) return max;
    return static_cast<uint64_t>(q);
}

template <typename T>
std::array<uint8_t, 8> element(T v) {
    std::array<uint8_t, 8> e{};
    std::memcpy(e.data(), &v, sizeof v);
    return e;
}

// A float converted to an unsigned integer type, saturating (NaN -> 0).
template <typename T>
T to_unsigned(float v) {
    if (!(v > 0)) return 0;
    if (static_cast<double>(v) >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
}

}  // namespace

std::array<uint8_t, 8> status_element(const Channel& c, const ChunkStatus& s) {
    using K = ChunkStatus::Kind;
    const bool fill = s.kind == K::NoValue || (s.kind == K::Unwritten && c.use_no_value);
    const float v = s.kind == K::Constant ? s.constant : (fill ? c.no_value : 0.0f);
    switch (c.format) {
        case Format::Bit1: return element<uint8_t>(v != 0 ? 1 : 0);
        case Format::U8:
            if (fill) return element<uint8_t>(0xFF);
            return element<uint8_t>(s.kind == K::Constant ? static_cast<uint8_t>(quantise(c, v, 0xFF)) : 0);
        case Format::U16:
            if (fill) return element<uint16_t>(0xFFFF);
            return element<uint16_t>(s.kind == K::Constant ? static_cast<uint16_t>(quantise(c, v, 0xFFFF)) : 0);
        case Format::R32: return element<float>(v);
        case Format::R64: return element<double>(v);
        case Format::U32: return element<uint32_t>(to_unsigned<uint32_t>(v));
        case Format::U64: return element<uint64_t>(to_unsigned<uint64_t>(v));
    }
    return {};
}

VdsLayerSource::VdsLayerSource(std::shared_ptr<const VolumeStore> volume, LayerInfo info)
    : volume_(std::move(volume)), info_(std::move(info)), type_(nc_type_of(info_.channel.format)),
      element_size_(type_size(type_)) {
    const auto& g = info_.geometry;
    for (size_t k = 0; k < g.rank(); ++k)
        shape_.push_back(static_cast<uint64_t>(g.view_samples(static_cast<int>(g.rank() - 1 - k))));
}

ChunkShape VdsLayerSource::chunk_shape(const std::vector<int64_t>& chunk) const {
    const auto& g = info_.geometry;
    ChunkShape s;
    s.dimensionality = static_cast<int>(g.group.size());
    for (size_t k = 0; k < g.group.size(); ++k) s.size[k] = g.stored(g.group[k], chunk[g.group[k]]);
    s.format = info_.channel.format;
    return s;
}

DecodedChunk VdsLayerSource::load(uint64_t index, const std::vector<int64_t>& chunk) const {
    return cached_chunk(volume_->identity(), volume_->path() + "\n" + info_.name, index, [&] {
        const ChunkShape shape = chunk_shape(chunk);
        const std::string where = "layer " + info_.name + " chunk " + std::to_string(index);
        if (payload_bytes(shape) > kMaxChunkBytes)  // before anything is read
            throw FormatError(volume_->path(), 0, where + ": chunk of " + std::to_string(payload_bytes(shape)) +
                                                      " bytes exceeds the 512 MiB limit");
        const StoredObject o = info_.store->read(index, max_object_bytes(shape, info_.store->compression()));
        return decode_chunk(o.bytes, info_.store->compression(), shape, o.file, o.offset, where);
    });
}

void VdsLayerSource::copy_chunk(const std::vector<int64_t>& chunk, const Box& box, uint8_t* out) const {
    const auto& g = info_.geometry;
    const size_t rank = g.rank();
    uint64_t index = 0, scale = 1;
    for (size_t d = 0; d < rank; ++d) {
        index += static_cast<uint64_t>(chunk[d]) * scale;
        scale *= static_cast<uint64_t>(g.chunks[d]);
    }
    // The part of the box in this chunk's valid part, per VDS dim.
    std::vector<int64_t> lo(rank), hi(rank), in_stride(rank, 0), base(rank);
    for (size_t d = 0; d < rank; ++d) {
        const int di = static_cast<int>(d);
        lo[d] = std::max(box.first[d], g.valid_first(di, chunk[d]));
        hi[d] = std::min(box.end[d], g.valid_end(di, chunk[d]));
        if (lo[d] >= hi[d]) return;
        base[d] = g.chunk_lo(di, chunk[d]) >> g.shift[d];
    }
    const ChunkStatus status = status_of_hash(info_.store->hash(index));
    DecodedChunk data;
    std::array<uint8_t, 8> constant{};
    if (status.kind == ChunkStatus::Kind::Data) {
        data = load(index, chunk);
        int64_t s = 1;
        const ChunkShape shape = chunk_shape(chunk);
        for (size_t k = 0; k < g.group.size(); ++k) {
            in_stride[g.group[k]] = s;
            s *= shape.size[k];
        }
    } else {
        constant = status_element(info_.channel, status);
    }
    // Odometer over the intersection, VDS dim 0 innermost.
    std::vector<int64_t> at(lo);
    while (true) {
        uint64_t o = 0;
        int64_t i = 0;
        for (size_t d = 0; d < rank; ++d) {
            o += static_cast<uint64_t>(at[d] - box.first[d]) * box.out_stride[d];
            i += (at[d] - base[d]) * in_stride[d];
        }
        for (int64_t x = lo[0]; x < hi[0]; ++x, o += box.out_stride[0], i += in_stride[0]) {
            const uint8_t* src = data ? data->data() + static_cast<size_t>(i) * element_size_ : constant.data();
            std::memcpy(out + o * element_size_, src, element_size_);
        }
        size_t d = 1;
        for (; d < rank; ++d) {
            if (++at[d] < hi[d]) break;
            at[d] = lo[d];
        }
        if (d == rank) break;
    }
}

void VdsLayerSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                          void* out) const {
    check_box(shape_, start, count, info_.name.c_str());
    const auto& g = info_.geometry;
    const size_t rank = g.rank();
    Box box{std::vector<int64_t>(rank), std::vector<int64_t>(rank), std::vector<uint64_t>(rank)};
    uint64_t total = 1;
    for (size_t d = 0; d < rank; ++d) {
        const size_t k = rank - 1 - d;
        box.first[d] = static_cast<int64_t>(start[k]);
        box.end[d] = static_cast<int64_t>(start[k] + count[k]);
        box.out_stride[d] = total;
        total *= count[k];
    }
    if (total == 0) return;
    // Chunk ranges along each dim, then every combination. Outside the
    // group only the chunks of the LOD0 samples read (m << view_shift).
    std::vector<int64_t> c0(rank), c1(rank), step(rank);
    for (size_t d = 0; d < rank; ++d) {
        const int di = static_cast<int>(d);
        c0[d] = g.chunk_of(di, box.first[d] << g.view_shift[d]);
        c1[d] = g.chunk_of(di, (box.end[d] - 1) << g.view_shift[d]);
        step[d] = g.in_group(di) ? 1 : int64_t{1} << g.view_shift[d];
    }
    std::vector<int64_t> chunk(c0);
    auto* bytes = static_cast<uint8_t*>(out);
    while (true) {
        copy_chunk(chunk, box, bytes);
        size_t d = 0;
        for (; d < rank; ++d) {
            if ((chunk[d] += step[d]) <= c1[d]) break;
            chunk[d] = c0[d];
        }
        if (d == rank) break;
    }
    if (order == ByteOrder::Big) swap_to_big_endian(type_, out, total);
}

}  // namespace ncafs::vds
