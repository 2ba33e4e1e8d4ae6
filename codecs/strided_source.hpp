// StridedSource: every stride-th sample of another ArraySource along each
// dimension (decimation, never averaging: each value is a real sample, so
// integer data and fill values stay valid). Element i of dimension d is
// element i*stride[d] of the inner source; the length is ceil(n/stride).
// A read touches only the rows it needs: one inner read per selected outer
// index, and along the innermost decimated dimension either one inner read
// per selected index, or (when the samples skipped between two kept ones fit
// in 4 KiB, as along the last dimension: they share disk pages anyway) spans
// thinned in memory, in pieces of at most 1 MiB.
// Immutable, thread-safe when the inner source is.
#pragma once

#include <memory>
#include <vector>

#include "codecs/array_source.hpp"

namespace ncafs {

class StridedSource final : public ArraySource {
public:
    // strides: one per dimension of inner, each >= 1; throws UsageError otherwise.
    StridedSource(std::shared_ptr<const ArraySource> inner, std::vector<uint64_t> strides);

    NcType type() const override { return inner_->type(); }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;

private:
    // Reads the selected indices of dimension k (and everything after it)
    // for one combination of the outer indices, whose inner start is in
    // inner_start[0..k), into out.
    void read_row(std::vector<uint64_t>& inner_start, std::span<const uint64_t> start,
                  std::span<const uint64_t> count, size_t k, ByteOrder order, uint8_t* out) const;

    std::shared_ptr<const ArraySource> inner_;
    std::vector<uint64_t> strides_;
    std::vector<uint64_t> shape_;
};

}  // namespace ncafs
