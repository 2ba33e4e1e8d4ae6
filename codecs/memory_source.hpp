// ArraySources over values held in memory: a whole array of values
// (MemorySource: the char arrays the ncstream reader makes of STRING
// variables) or one value repeated everywhere (ConstantSource: an empty ds
// variable's fill, a constant aggregation fragment). Immutable, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "codecs/array_source.hpp"

namespace ncafs {

class MemorySource final : public ArraySource {
public:
    // values: element_count(shape) elements of type t, native byte order;
    // throws UsageError otherwise. what: names the array in read errors.
    MemorySource(NcType t, std::vector<uint64_t> shape, std::vector<uint8_t> values,
                 std::string what = "in-memory variable");
    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;

private:
    NcType type_;
    std::vector<uint64_t> shape_;
    std::vector<uint8_t> values_;
    std::string what_;
};

class ConstantSource final : public ArraySource {
public:
    // element: one value of type t in native byte order (type_size(t) bytes);
    // throws UsageError otherwise. what: names the array in read errors.
    ConstantSource(NcType t, std::vector<uint64_t> shape, std::vector<uint8_t> element,
                   std::string what = "constant");
    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;

private:
    NcType type_;
    std::vector<uint64_t> shape_;
    std::vector<uint8_t> native_, big_;  // the element in both orders, swapped once
    std::string what_;
};

}  // namespace ncafs
