#include "aggregation/model/sparse_part_read.hpp"

#include "aggregation/model/scatter_box.hpp"
#include "codecs/checked_math.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg {

bool box_too_sparse(uint64_t box_elements, uint64_t needed_elements) {
    const uint64_t allowed =
        checked::add(checked::mul(needed_elements, kMaxBoxAmplification).value_or(UINT64_MAX), kBoxSlackElements)
            .value_or(UINT64_MAX);
    return box_elements > allowed;
}

void read_in_runs(size_t d, const IndexAlong& index, const std::vector<uint64_t>& lo, const std::vector<uint64_t>& len,
                  size_t esize, void* dst, const ReadSubPiece& read_sub) {
    std::vector<uint64_t> sub_lo = lo, sub_len = len, at(len.size(), 0);
    std::vector<uint8_t> piece;
    uint64_t j = 0;
    while (j < len[d]) {
        uint64_t end = j + 1;
        for (uint64_t prev = index(j); end < len[d]; ++end) {
            const uint64_t next = index(end);
            if (next != prev + 1) break;
            prev = next;
        }
        sub_lo[d] = lo[d] + j;
        sub_len[d] = end - j;
        at[d] = j;
        piece.resize(element_count(sub_len) * esize);  // at most the piece itself
        read_sub(sub_lo, sub_len, piece.data());
        scatter_box(piece.data(), sub_len, at, len, esize, static_cast<uint8_t*>(dst));
        j = end;
    }
}

}  // namespace ncafs::agg
