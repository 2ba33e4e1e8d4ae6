#include "aggregation/model/scatter_box.hpp"

#include <cstring>

namespace ncafs::agg {

void scatter_box(const uint8_t* src, const std::vector<uint64_t>& len, const std::vector<uint64_t>& at,
                 const std::vector<uint64_t>& outer, size_t esize, uint8_t* dst) {
    const size_t rank = len.size();
    if (rank == 0) {
        std::memcpy(dst, src, esize);
        return;
    }
    std::vector<uint64_t> stride(rank, 1);
    for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * outer[d + 1];
    const uint64_t row = len[rank - 1] * esize;
    std::vector<uint64_t> i(rank, 0);
    while (true) {
        uint64_t off = 0;
        for (size_t d = 0; d < rank; ++d) off += (at[d] + i[d]) * stride[d];
        std::memcpy(dst + off * esize, src, row);
        src += row;
        size_t d = rank - 1;
        while (d-- > 0) {
            if (++i[d] < len[d]) break;
            i[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
    }
}

}  // namespace ncafs::agg
