// Master index -> fragment source index, by arithmetic alone (no file, no
// cache, no lock): the transform of docs/conventions/README.md "Reading a
// fragment" (reversal, permutation, size-1 axes, `part`), the source box a
// piece needs, and the gathering of that box into master order. The
// aggregated source (aggregation/read/aggregated_source.cpp) resolves the
// fragment and reads; this file only computes where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "aggregation/model/fragment.hpp"

namespace ncafs::agg {

// Elements of a piece along source axis k: the piece's length `len` along
// the master dim the axis maps to, 1 for an extra size-1 axis.
uint64_t piece_axis_length(const Fragment& f, const std::vector<uint64_t>& len, size_t k);

// Source index along source axis k of master offset local[d] + j (d the
// master dim of k): reversal (step 2), then part (step 4). `local`: the
// piece's offsets inside the fragment's box. An extra size-1 axis gives
// index 0 before its part.
struct SourceIndex {
    const Fragment& f;
    const std::vector<uint64_t>& local;
    uint64_t operator()(size_t k, uint64_t j) const;
};

// A box of the fragment's source, per source axis: lowest index and count.
struct SourceBox {
    std::vector<uint64_t> lo, count;
};

// The smallest source box holding every element of the piece of lengths
// `len` (master order).
SourceBox source_box(const Fragment& f, const SourceIndex& index, const std::vector<uint64_t>& len);

// The source axis whose box exceeds the piece's elements along it most (a
// list may repeat indices): the one a sparse piece is split along.
size_t sparsest_axis(const Fragment& f, const std::vector<uint64_t>& len, const SourceBox& box);

// The elements of `src` (the source box `box`, C order, esize bytes each)
// gathered into master order for the piece of lengths `len`.
std::vector<uint8_t> gather_master_order(const Fragment& f, const SourceIndex& index, const std::vector<uint64_t>& len,
                                         const SourceBox& box, const uint8_t* src, size_t esize);

// The part of a request [req_start, req_start + req_count) inside a
// fragment's box [frag_start, frag_start + frag_count): its master box
// [lo, lo + len), its offset `at` inside the request, and whether it is the
// whole request.
struct PieceOfRequest {
    std::vector<uint64_t> lo, len, at;
    bool whole = true;
};
PieceOfRequest piece_of_request(const std::vector<uint64_t>& req_start, const std::vector<uint64_t>& req_count,
                                const std::vector<uint64_t>& frag_start, const std::vector<uint64_t>& frag_count);

// Whether the box [start, start + count) lies inside the box
// [outer_start, outer_start + outer_count).
bool box_inside(std::span<const uint64_t> start, std::span<const uint64_t> count,
                const std::vector<uint64_t>& outer_start, const std::vector<uint64_t>& outer_count);

// The C-order offset of master index `index` inside the box
// [box_start, box_start + box_count).
uint64_t offset_in_box(const std::vector<uint64_t>& index, const std::vector<uint64_t>& box_start,
                       const std::vector<uint64_t>& box_count);

// The master index of element `linear` of the C-order linearisation of
// `shape`; nullopt when the shape holds no element.
std::optional<std::vector<uint64_t>> unravel_index(uint64_t linear, const std::vector<uint64_t>& shape);

}  // namespace ncafs::agg
