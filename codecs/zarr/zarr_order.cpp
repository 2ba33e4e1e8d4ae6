#include "codecs/zarr/zarr_order.hpp"

#include <cstring>

namespace ncafs::zarr {
namespace {

// Rows of the C-order output (the last index fastest): each gathers its
// elements from the column-major input, `stride` elements apart.
template <size_t Item>
void gather_rows(const uint8_t* in, const std::vector<uint64_t>& chunks, size_t item, uint8_t* out) {
    const size_t rank = chunks.size(), last = rank - 1;
    std::vector<uint64_t> f_stride(rank, 1);  // column-major strides, elements
    for (size_t k = 1; k < rank; ++k) f_stride[k] = f_stride[k - 1] * chunks[k - 1];
    const uint64_t run = chunks[last], step = f_stride[last];
    std::vector<uint64_t> idx(rank, 0);
    for (;;) {
        uint64_t at = 0;
        for (size_t k = 0; k < last; ++k) at += idx[k] * f_stride[k];
        const uint8_t* from = in + at * item;
        for (uint64_t i = 0; i < run; ++i, out += item, from += step * item)
            std::memcpy(out, from, Item ? Item : item);
        size_t k = last;
        while (k > 0 && ++idx[k - 1] == chunks[k - 1]) idx[--k] = 0;
        if (k == 0) return;
    }
}

}  // namespace

std::vector<uint8_t> fortran_to_c_order(std::span<const uint8_t> in, const std::vector<uint64_t>& chunks, size_t item) {
    std::vector<uint8_t> out(in.size());
    if (chunks.size() < 2 || in.empty()) {
        std::memcpy(out.data(), in.data(), in.size());
        return out;
    }
    switch (item) {  // fixed sizes: memcpy becomes one move
        case 1: gather_rows<1>(in.data(), chunks, item, out.data()); break;
        case 2: gather_rows<2>(in.data(), chunks, item, out.data()); break;
        case 4: gather_rows<4>(in.data(), chunks, item, out.data()); break;
        case 8: gather_rows<8>(in.data(), chunks, item, out.data()); break;
        default: gather_rows<0>(in.data(), chunks, item, out.data());
    }
    return out;
}

}  // namespace ncafs::zarr
