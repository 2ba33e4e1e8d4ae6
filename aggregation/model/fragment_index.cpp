#include "aggregation/model/fragment_index.hpp"

#include <algorithm>
#include <cstring>

namespace ncafs::agg {

namespace {

inline void copy_element(uint8_t* dst, const uint8_t* src, size_t esize) {
    switch (esize) {
        case 1: *dst = *src; return;
        case 2: std::memcpy(dst, src, 2); return;
        case 4: std::memcpy(dst, src, 4); return;
        default: std::memcpy(dst, src, 8); return;
    }
}

uint64_t product(const std::vector<uint64_t>& v) {
    uint64_t n = 1;
    for (uint64_t x : v) n *= x;
    return n;
}

}  // namespace

uint64_t piece_axis_length(const Fragment& f, const std::vector<uint64_t>& len, size_t k) {
    const int d = f.axis_to_master[k];
    return d >= 0 ? len[static_cast<size_t>(d)] : 1;
}

uint64_t SourceIndex::operator()(size_t k, uint64_t j) const {
    int d = f.axis_to_master[k];
    uint64_t q = 0;
    if (d >= 0) {
        const size_t dd = static_cast<size_t>(d);
        uint64_t o = local[dd] + j;
        q = f.reverse[dd] ? f.count[dd] - 1 - o : o;
    }
    return !f.part.empty() && f.part[k] ? f.part[k]->at(q) : q;
}

SourceBox source_box(const Fragment& f, const SourceIndex& index, const std::vector<uint64_t>& len) {
    const size_t K = f.axis_to_master.size();
    SourceBox box{std::vector<uint64_t>(K, 0), std::vector<uint64_t>(K, 0)};
    for (size_t k = 0; k < K; ++k) {
        uint64_t m = piece_axis_length(f, len, k);
        uint64_t mn = UINT64_MAX, mx = 0;
        if (!f.part.empty() && f.part[k] && f.part[k]->is_list) {
            for (uint64_t j = 0; j < m; ++j) mn = std::min(mn, index(k, j)), mx = std::max(mx, index(k, j));
        } else {  // monotonic: the ends suffice
            uint64_t a = index(k, 0), b = index(k, m - 1);
            mn = std::min(a, b), mx = std::max(a, b);
        }
        box.lo[k] = mn;
        box.count[k] = mx - mn + 1;
    }
    return box;
}

size_t sparsest_axis(const Fragment& f, const std::vector<uint64_t>& len, const SourceBox& box) {
    auto excess = [&](size_t q) { return box.count[q] - std::min(box.count[q], piece_axis_length(f, len, q)); };
    size_t k = 0;
    for (size_t q = 1; q < box.count.size(); ++q)
        if (excess(q) > excess(k)) k = q;
    return k;
}

std::vector<uint8_t> gather_master_order(const Fragment& f, const SourceIndex& index, const std::vector<uint64_t>& len,
                                         const SourceBox& box, const uint8_t* src, size_t esize) {
    const size_t rank = len.size(), K = f.axis_to_master.size();
    // Per master dim, the source offset (in elements of the box) of each index.
    std::vector<uint64_t> sstride(K, 1);
    for (size_t k = K; k-- > 1;) sstride[k - 1] = sstride[k] * box.count[k];
    std::vector<std::vector<uint64_t>> contrib(rank);
    for (size_t d = 0; d < rank; ++d) contrib[d].assign(len[d], 0);
    uint64_t base = 0;
    for (size_t k = 0; k < K; ++k) {
        int d = f.axis_to_master[k];
        if (d < 0) {
            base += (index(k, 0) - box.lo[k]) * sstride[k];
            continue;
        }
        for (uint64_t j = 0; j < len[static_cast<size_t>(d)]; ++j)
            contrib[static_cast<size_t>(d)][j] = (index(k, j) - box.lo[k]) * sstride[k];
    }
    std::vector<uint8_t> gathered(product(len) * esize);
    uint8_t* out = gathered.data();
    if (rank == 0) {
        copy_element(out, src + base * esize, esize);
        return gathered;
    }
    std::vector<uint64_t> i(rank, 0);
    const auto& inner = contrib[rank - 1];
    while (true) {
        uint64_t off = base;
        for (size_t d = 0; d + 1 < rank; ++d) off += contrib[d][i[d]];
        for (uint64_t j = 0; j < len[rank - 1]; ++j, out += esize) copy_element(out, src + (off + inner[j]) * esize, esize);
        size_t d = rank - 1;
        while (d-- > 0) {
            if (++i[d] < len[d]) break;
            i[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
    }
    return gathered;
}

PieceOfRequest piece_of_request(const std::vector<uint64_t>& req_start, const std::vector<uint64_t>& req_count,
                                const std::vector<uint64_t>& frag_start, const std::vector<uint64_t>& frag_count) {
    const size_t rank = req_start.size();
    PieceOfRequest p{std::vector<uint64_t>(rank), std::vector<uint64_t>(rank), std::vector<uint64_t>(rank), true};
    for (size_t d = 0; d < rank; ++d) {
        uint64_t a = std::max(req_start[d], frag_start[d]);
        uint64_t b = std::min(req_start[d] + req_count[d], frag_start[d] + frag_count[d]);
        p.lo[d] = a;
        p.len[d] = b - a;
        p.at[d] = a - req_start[d];
        if (p.len[d] != req_count[d]) p.whole = false;
    }
    return p;
}

bool box_inside(std::span<const uint64_t> start, std::span<const uint64_t> count,
                const std::vector<uint64_t>& outer_start, const std::vector<uint64_t>& outer_count) {
    for (size_t d = 0; d < outer_start.size(); ++d)
        if (start[d] < outer_start[d] || start[d] + count[d] > outer_start[d] + outer_count[d]) return false;
    return true;
}

uint64_t offset_in_box(const std::vector<uint64_t>& index, const std::vector<uint64_t>& box_start,
                       const std::vector<uint64_t>& box_count) {
    uint64_t offset = 0;
    for (size_t d = 0; d < box_start.size(); ++d) offset = offset * box_count[d] + (index[d] - box_start[d]);
    return offset;
}

std::optional<std::vector<uint64_t>> unravel_index(uint64_t linear, const std::vector<uint64_t>& shape) {
    std::vector<uint64_t> index(shape.size(), 0);
    for (size_t d = shape.size(); d-- > 0;) {
        if (shape[d] == 0) return std::nullopt;
        index[d] = linear % shape[d];
        linear /= shape[d];
    }
    return index;
}

}  // namespace ncafs::agg
