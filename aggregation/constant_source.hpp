// An array whose every element is one value (a fill value, or a constant
// fragment of later aggregation generations).
#pragma once

#include <vector>

#include "codecs/array_source.hpp"

namespace ncafs::agg {

class ConstantSource final : public ArraySource {
public:
    // element: one value of `type` in native byte order.
    ConstantSource(NcType type, std::vector<uint64_t> shape, std::vector<uint8_t> element);
    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;

private:
    NcType type_;
    std::vector<uint64_t> shape_;
    std::vector<uint8_t> native_, big_;
};

}  // namespace ncafs::agg
