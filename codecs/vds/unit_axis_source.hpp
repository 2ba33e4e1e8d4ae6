// A 1-D source seen as 2-D, with a leading axis of length 1: how the .vds
// view holds a dataset whose largest variable has rank 1 (VDS volumes have
// at least two axes). The C-order linearisation is the inner source's, so
// file extents and uniform values pass through. Thread-safe when the inner
// source is.
#pragma once

#include <memory>
#include <vector>

#include "codecs/array_source.hpp"

namespace ncafs::vds {

class UnitAxisSource final : public ArraySource {
public:
    explicit UnitAxisSource(std::shared_ptr<const ArraySource> inner);
    NcType type() const override { return inner_->type(); }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    bool draws_on_other_files() const override { return inner_->draws_on_other_files(); }
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override {
        return inner_->big_endian_extents(first, n);
    }
    std::optional<std::vector<uint8_t>> uniform_value(std::span<const uint64_t> start,
                                                      std::span<const uint64_t> count) const override;

private:
    std::shared_ptr<const ArraySource> inner_;
    std::vector<uint64_t> shape_;
};

}  // namespace ncafs::vds
