#include "aggregation/constant_source.hpp"

#include <stdexcept>

namespace ncafs::agg {

ConstantSource::ConstantSource(NcType type, std::vector<uint64_t> shape, std::vector<uint8_t> element)
    : type_(type), shape_(std::move(shape)), native_(std::move(element)) {
    if (native_.size() != type_size(type_)) throw std::invalid_argument("constant element has the wrong size");
    big_ = native_;
    swap_to_big_endian(type_, big_.data(), 1);
}

void ConstantSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                          void* out) const {
    check_box(shape_, start, count, "constant");
    uint64_t n = 1;
    for (uint64_t c : count) n *= c;
    fill_elements(out, (order == ByteOrder::Big ? big_ : native_).data(), native_.size(), n);
}

}  // namespace ncafs::agg
