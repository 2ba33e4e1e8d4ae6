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

void StridedSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                         void* out) const {
    check_box(shape_, start, count, "strided (LOD) variable");
    for (uint64_t c : count)
        if (c == 0) return;
    // k: the innermost decimated dimension; the dimensions after it are read whole.
    size_t k = strides_.size();
    for (size_t d = 0; d < strides_.size(); ++d)
        if (strides_[d] > 1) k = d;
    if (k == strides_.size()) return inner_->read(start, count, order, out);

    const uint64_t row_elements = ncafs::element_count(count.subspan(k));
    const uint64_t row_bytes = row_elements * type_size(type());
    std::vector<uint64_t> inner_start(strides_.size());
    std::vector<uint64_t> index(k, 0);  // odometer over the outer dimensions [0, k)
    auto* dst = static_cast<uint8_t*>(out);
    for (;;) {
        for (size_t d = 0; d < k; ++d) inner_start[d] = (start[d] + index[d]) * strides_[d];
        read_row(inner_start, start, count, k, order, dst);
        dst += row_bytes;
        size_t d = k;
        while (d > 0 && ++index[d - 1] == count[d - 1]) index[--d] = 0;
        if (d == 0) return;
    }
}

void StridedSource::read_row(std::vector<uint64_t>& inner_start, std::span<const uint64_t> start,
                             std::span<const uint64_t> count, size_t k, ByteOrder order, uint8_t* out) const {
    const size_t rank = strides_.size();
    std::vector<uint64_t> inner_count(rank, 1);
    for (size_t d = k + 1; d < rank; ++d) {
        inner_start[d] = start[d];
        inner_count[d] = count[d];
    }
    const uint64_t block_elements = ncafs::element_count(count.subspan(k + 1));
    const uint64_t block_bytes = block_elements * type_size(type());
    if (strides_[k] * block_bytes > kSpanGapBytes) {
        for (uint64_t i = 0; i < count[k]; ++i) {  // one inner read per selected index
            inner_start[k] = (start[k] + i) * strides_[k];
            inner_->read(inner_start, inner_count, order, out + i * block_bytes);
        }
        return;
    }
    // Spans from a selected index to a later one, thinned here, in pieces.
    const uint64_t per_piece = std::max<uint64_t>(1, kSpanPieceBytes / (strides_[k] * block_bytes));
    std::vector<uint8_t> span;
    for (uint64_t first = 0; first < count[k]; first += per_piece) {
        const uint64_t n = std::min(per_piece, count[k] - first);
        inner_start[k] = (start[k] + first) * strides_[k];
        inner_count[k] = (n - 1) * strides_[k] + 1;
        span.resize(inner_count[k] * block_bytes);
        inner_->read(inner_start, inner_count, order, span.data());
        for (uint64_t i = 0; i < n; ++i)
            std::memcpy(out + (first + i) * block_bytes, span.data() + i * strides_[k] * block_bytes, block_bytes);
    }
}

}  // namespace ncafs
