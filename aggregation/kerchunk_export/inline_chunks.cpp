#include "aggregation/kerchunk_export/inline_chunks.hpp"

#include <cstring>

#include "codecs/zarr/base64.hpp"

namespace ncafs::agg::kerchunk {

namespace {

// The box's values in `type`, native order.
std::vector<uint8_t> view_values(const ArraySource& source, NcType type, const Box& box) {
    const uint64_t n = element_count(box.count);
    std::vector<uint8_t> raw(static_cast<size_t>(n * type_size(source.type())));
    if (n > 0) source.read(box.start, box.count, ByteOrder::Native, raw.data());
    if (source.type() == type) return raw;
    std::vector<uint8_t> out(static_cast<size_t>(n * type_size(type)));
    convert_elements(source.type(), raw.data(), type, out.data(), static_cast<size_t>(n));
    return out;
}

// values (box.count, C order) placed at the origin of a chunk full of pad.
std::vector<uint8_t> padded(const std::vector<uint8_t>& values, const Box& box, const std::vector<uint64_t>& chunk,
                            size_t size, const std::vector<uint8_t>& pad) {
    if (box.count == chunk) return values;
    const uint64_t total = element_count(chunk);
    std::vector<uint8_t> out(static_cast<size_t>(total * size));
    fill_elements(out.data(), pad.data(), size, static_cast<size_t>(total));
    const size_t rank = chunk.size();
    const uint64_t rows = element_count(box.count) / std::max<uint64_t>(box.count[rank - 1], 1);
    const size_t row_bytes = static_cast<size_t>(box.count[rank - 1] * size);
    std::vector<uint64_t> at(rank, 0);  // row index within box.count (last dim 0)
    for (uint64_t r = 0; r < rows && row_bytes > 0; ++r) {
        uint64_t dst = 0;
        for (size_t d = 0; d < rank; ++d) dst = dst * chunk[d] + at[d];
        std::memcpy(out.data() + dst * size, values.data() + r * row_bytes, row_bytes);
        for (size_t d = rank - 1; d-- > 0;) {
            if (++at[d] < box.count[d]) break;
            at[d] = 0;
        }
    }
    return out;
}

}  // namespace

std::string inline_chunk(const ArraySource& source, NcType type, const Box& box, const ChunkGrid& grid,
                         const std::vector<uint8_t>& pad) {
    const size_t size = type_size(type);
    std::vector<uint8_t> bytes = padded(view_values(source, type, box), box, grid.chunk, size, pad);
    if (grid.big_endian) swap_to_big_endian(type, bytes.data(), bytes.size() / size);
    bytes = encode_chunk(std::move(bytes), grid.filters);
    return "base64:" + zarr::base64_encode(std::span<const uint8_t>(bytes.data(), bytes.size()));
}

}  // namespace ncafs::agg::kerchunk
