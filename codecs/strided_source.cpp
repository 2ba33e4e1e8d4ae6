#include "codecs/strided_source.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/dataset.hpp"
#include "codecs/error.hpp"

namespace ncafs {

namespace {

// When the samples skipped between two selected indices of the innermost
// decimated dimension fit in a page, a span is read and thinned in memory
// (they share disk pages with the kept ones); else one inner read per index.
constexpr uint64_t kSpanGapBytes = 4096;
// A span is read in pieces of at most this many bytes (bounded memory).
constexpr uint64_t kSpanPieceBytes = 1 << 20;

}  // namespace

StridedSource::StridedSource(std::shared_ptr<const ArraySource> inner, std::vector<uint64_t> strides)
    : inner_(std::move(inner)), strides_(std::move(strides)) {
    if (!inner_ || strides_.size() != inner_->shape().size())
        throw UsageError("strided source: one stride per dimension is needed");
    for (size_t d = 0; d < strides_.size(); ++d) {
        if (strides_[d] == 0) throw UsageError("strided source: stride 0");
        const uint64_t n = inner_->shape()[d];
        shape_.push_back(n / strides_[d] + (n % strides_[d] != 0 ? 1 : 0));
    }
}

// One read() call: the box asked for, its innermost decimated dimension k,
// the outer dimensions kept whole (stride 1: read in the same inner box as
// k, then scattered) and the byte strides of the output.
struct StridedSource::Request {
    std::span<const uint64_t> start, count;
    size_t k = 0;
    ByteOrder order = ByteOrder::Native;
    uint8_t* out = nullptr;
    std::vector<size_t> whole_outer;    // outer dimensions of stride 1
    std::vector<uint64_t> out_strides;  // bytes between neighbours along each dimension of out
    uint64_t block_bytes = 0;           // bytes after k (one kept index of k)
    uint64_t whole_outer_elements = 1;  // product of count over whole_outer
};

void StridedSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                         void* out) const {
    check_box(shape_, start, count, "strided (LOD) variable");
    for (uint64_t c : count)
        if (c == 0) return;
    const size_t rank = strides_.size();
    Request r{start, count, rank, order, static_cast<uint8_t*>(out), {}, std::vector<uint64_t>(rank), 0, 1};
    for (size_t d = 0; d < rank; ++d)
        if (strides_[d] > 1) r.k = d;  // the innermost decimated dimension
    if (r.k == rank) return inner_->read(start, count, order, out);
    uint64_t bytes = type_size(type());
    for (size_t d = rank; d-- > 0;) {
        r.out_strides[d] = bytes;
        bytes *= count[d];
    }
    r.block_bytes = r.out_strides[r.k];
    std::vector<size_t> decimated_outer;
    for (size_t d = 0; d < r.k; ++d) {
        (strides_[d] > 1 ? decimated_outer : r.whole_outer).push_back(d);
        if (strides_[d] == 1) r.whole_outer_elements *= count[d];
    }
    // The inner box: whole outer dimensions and those after k as asked; the
    // decimated outer ones one kept index at a time (odometer below).
    std::vector<uint64_t> inner_start(rank), inner_count(rank, 1);
    for (size_t d = 0; d < rank; ++d)
        if (d != r.k && strides_[d] == 1) inner_start[d] = start[d], inner_count[d] = count[d];
    std::vector<uint64_t> index(decimated_outer.size(), 0);
    for (;;) {
        uint64_t base = 0;
        for (size_t j = 0; j < index.size(); ++j) {
            const size_t d = decimated_outer[j];
            inner_start[d] = (start[d] + index[j]) * strides_[d];
            base += index[j] * r.out_strides[d];
        }
        read_along_k(r, inner_start, inner_count, base);
        size_t j = index.size();
        while (j > 0 && ++index[j - 1] == count[decimated_outer[j - 1]]) index[--j] = 0;
        if (j == 0) return;
    }
}

void StridedSource::read_along_k(const Request& r, std::vector<uint64_t>& inner_start,
                                 std::vector<uint64_t>& inner_count, uint64_t base) const {
    const size_t k = r.k;
    // Spans (thinned here) when the samples skipped between kept ones fit in
    // a page; else one inner read per kept index.
    const bool spans = strides_[k] * r.block_bytes <= kSpanGapBytes;
    const uint64_t per_piece =
        spans ? std::max<uint64_t>(1, kSpanPieceBytes / (r.whole_outer_elements * strides_[k] * r.block_bytes)) : 1;
    std::vector<uint8_t> piece;
    for (uint64_t first = 0; first < r.count[k]; first += per_piece) {
        const uint64_t n = std::min(per_piece, r.count[k] - first);
        inner_start[k] = (r.start[k] + first) * strides_[k];
        inner_count[k] = (n - 1) * strides_[k] + 1;
        piece.resize(r.whole_outer_elements * inner_count[k] * r.block_bytes);
        inner_->read(inner_start, inner_count, r.order, piece.data());
        scatter(r, piece, inner_count[k], first, n, base);
    }
}

void StridedSource::scatter(const Request& r, const std::vector<uint8_t>& piece, uint64_t piece_k, uint64_t first,
                            uint64_t n, uint64_t base) const {
    // piece: C order over [whole outer dimensions..., piece_k, block].
    std::vector<uint64_t> at(r.whole_outer.size(), 0);
    for (uint64_t outer = 0; outer < r.whole_outer_elements; ++outer) {
        uint64_t dst = base + first * r.block_bytes;
        for (size_t j = 0; j < at.size(); ++j) dst += at[j] * r.out_strides[r.whole_outer[j]];
        const uint8_t* src = piece.data() + outer * piece_k * r.block_bytes;
        for (uint64_t i = 0; i < n; ++i)
            std::memcpy(r.out + dst + i * r.block_bytes, src + i * strides_[r.k] * r.block_bytes, r.block_bytes);
        size_t j = at.size();
        while (j > 0 && ++at[j - 1] == r.count[r.whole_outer[j - 1]]) at[--j] = 0;
    }
}

}  // namespace ncafs
