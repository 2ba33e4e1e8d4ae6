#include "aggregation/zarr_view/zarr_grid.hpp"

#include <algorithm>

#include "codecs/error.hpp"

namespace ncafs::agg::zarr_view {

namespace {

uint64_t saturating_product(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

// Whole dimensions from the innermost while they fit in `bound` bytes, then
// as many indices of the next as fit; `last_whole` the outermost dimension
// that may be whole (1: the record dimension is cut to one record).
std::vector<uint64_t> inner_first(const std::vector<uint64_t>& shape, uint64_t element_size, size_t last_whole,
                                  uint64_t bound) {
    std::vector<uint64_t> chunk(shape.size(), 1);
    uint64_t bytes = element_size;
    for (size_t d = shape.size(); d-- > 0;) {
        const uint64_t length = std::max<uint64_t>(shape[d], 1);
        if (d < last_whole) break;  // one record a chunk
        if (saturating_product(bytes, length) <= bound) {
            chunk[d] = length;
            bytes *= length;
            continue;
        }
        chunk[d] = std::clamp<uint64_t>(bound / bytes, 1, length);
        break;
    }
    return chunk;
}

}  // namespace

uint64_t ZarrGrid::chunk_bytes() const {
    uint64_t n = element_size;
    for (uint64_t c : chunk) n = saturating_product(n, c);
    return n;
}

ZarrGrid::Run ZarrGrid::run_of(uint64_t index) const {
    const size_t rank = shape.size();
    std::vector<uint64_t> at(rank);
    for (size_t d = rank; d-- > 0;) {
        at[d] = index % per_dim[d];
        index /= per_dim[d];
    }
    Run r{0, 1};
    for (size_t d = 0; d < rank; ++d) {
        const uint64_t start = at[d] * chunk[d];
        r.first = r.first * shape[d] + start;
        r.count *= std::min(chunk[d], shape[d] - start);
    }
    return r;
}

void ZarrGrid::box_of(uint64_t index, std::vector<uint64_t>& start, std::vector<uint64_t>& count) const {
    const size_t rank = shape.size();
    start.assign(rank, 0);
    count.assign(rank, 0);
    for (size_t d = rank; d-- > 0;) {
        start[d] = index % per_dim[d] * chunk[d];
        count[d] = std::min(chunk[d], shape[d] - start[d]);
        index /= per_dim[d];
    }
}

std::string ZarrGrid::key_of(uint64_t index) const {
    const size_t rank = shape.size();
    if (rank == 0) return "0";
    std::vector<uint64_t> at(rank);
    for (size_t d = rank; d-- > 0;) {
        at[d] = index % per_dim[d];
        index /= per_dim[d];
    }
    std::string key;
    for (size_t d = 0; d < rank; ++d) key += (d ? "." : "") + std::to_string(at[d]);
    return key;
}

int64_t ZarrGrid::index_of(const std::string& key) const {
    const size_t rank = shape.size();
    if (rank == 0) return key == "0" ? 0 : -1;
    uint64_t index = 0;
    size_t pos = 0;
    for (size_t d = 0; d < rank; ++d) {
        if (d > 0 && (pos >= key.size() || key[pos++] != '.')) return -1;
        const size_t begin = pos;
        uint64_t value = 0;
        while (pos < key.size() && key[pos] >= '0' && key[pos] <= '9' && pos - begin < 20) {
            value = value * 10 + static_cast<uint64_t>(key[pos] - '0');
            if (value >= per_dim[d]) return -1;
            ++pos;
        }
        if (pos == begin || (key[begin] == '0' && pos - begin > 1)) return -1;
        index = index * per_dim[d] + value;
    }
    return pos == key.size() ? static_cast<int64_t>(index) : -1;
}

ZarrGrid choose_zarr_grid(const std::vector<uint64_t>& shape, uint64_t element_size, bool record, bool coordinate) {
    if (coordinate && saturating_product(element_size, std::max<uint64_t>(shape[0], 1)) <= kWholeCoordinateBytes)
        return zarr_grid_of(shape, {std::max<uint64_t>(shape[0], 1)}, element_size);
    return zarr_grid_of(shape, inner_first(shape, element_size, record ? 1 : 0, kMaxZarrChunkBytes), element_size);
}

ZarrGrid zarr_grid_of(const std::vector<uint64_t>& shape, const std::vector<uint64_t>& chunk, uint64_t element_size) {
    ZarrGrid g;
    g.shape = shape;
    g.element_size = element_size;
    g.chunk = chunk;
    for (uint64_t& c : g.chunk) c = std::max<uint64_t>(c, 1);
    g.chunk_count = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
        g.per_dim.push_back(shape[d] == 0 ? 0 : (shape[d] - 1) / g.chunk[d] + 1);
        g.chunk_count = saturating_product(g.chunk_count, g.per_dim.back());
    }
    if (g.chunk_count > (uint64_t{1} << 53))
        throw UsageError(std::to_string(g.chunk_count) + " chunks, more than a chunk index may count");
    return g;
}

}  // namespace ncafs::agg::zarr_view
