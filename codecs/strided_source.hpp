// StridedSource: every stride-th sample of another ArraySource along each
// dimension (decimation, never averaging: each value is a real sample, so
// integer data and fill values stay valid). Element i of dimension d is
// element i*stride[d] of the inner source; the length is ceil(n/stride).
// A read touches only the rows it needs: one inner read per kept index of
// each decimated outer dimension (the whole outer dimensions, such as a kept
// record dimension, go in the same inner box and are scattered), and along
// the innermost decimated dimension either one inner read per kept index,
// or (when the samples skipped between two kept ones fit in 4 KiB, as along
// the last dimension: they share disk pages anyway) spans thinned in memory,
// in pieces of about 1 MiB.
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
    bool draws_on_other_files() const override { return inner_->draws_on_other_files(); }

private:
    struct Request;
    // Reads the kept indices of the innermost decimated dimension (in pieces)
    // for one combination of the decimated outer indices (byte offset `base`).
    void read_along_k(const Request& r, std::vector<uint64_t>& inner_start, std::vector<uint64_t>& inner_count,
                      uint64_t base) const;
    // Copies the kept samples of one inner read into the output.
    void scatter(const Request& r, const std::vector<uint8_t>& piece, uint64_t piece_k, uint64_t first, uint64_t n,
                 uint64_t base) const;

    std::shared_ptr<const ArraySource> inner_;
    std::vector<uint64_t> strides_;
    std::vector<uint64_t> shape_;
};

}  // namespace ncafs
