// An ArraySource over values held in memory (native byte order): the char
// arrays the reader makes of ncstream STRING variables.
#pragma once

#include <vector>

#include "codecs/array_source.hpp"

namespace ncafs::ncstream {

class MemorySource final : public ArraySource {
public:
    // values: element_count(shape) elements of type t, native byte order.
    MemorySource(NcType t, std::vector<uint64_t> shape, std::vector<uint8_t> values);
    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;

private:
    NcType type_;
    std::vector<uint64_t> shape_;
    std::vector<uint8_t> values_;
};

}  // namespace ncafs::ncstream
