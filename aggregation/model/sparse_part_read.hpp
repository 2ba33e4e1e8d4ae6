// Reading a fragment piece whose `part` selection is sparse. The usual path
// reads the source box spanning min..max of the selected indices and gathers
// from it; for part = [[0, N-1]] that box is the whole axis, so an 8-byte read
// would allocate and read gigabytes. Above kMaxBoxAmplification the piece is
// split instead, along its sparsest axis, into runs of consecutive source
// indices, each read (recursively) on its own: the work stays proportional
// to the elements served.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ncafs::agg {

// A source box of `box_elements` read for `needed` elements is refused above
// this ratio (plus a small floor so that dense small pieces stay one read).
constexpr uint64_t kMaxBoxAmplification = 4;
constexpr uint64_t kBoxSlackElements = 4096;

bool box_too_sparse(uint64_t box_elements, uint64_t needed_elements);

// Source index of position j (0 <= j < len[d]) along master dim d.
using IndexAlong = std::function<uint64_t(uint64_t j)>;
// Reads the sub-piece [lo, lo + len) of master space into dst (C order, esize bytes each).
using ReadSubPiece = std::function<void(const std::vector<uint64_t>& lo, const std::vector<uint64_t>& len, void* dst)>;

// Splits the piece [lo, lo + len) along master dim d into maximal runs whose
// source indices step by +1, reads each with read_sub and places it in dst.
void read_in_runs(size_t d, const IndexAlong& index, const std::vector<uint64_t>& lo, const std::vector<uint64_t>& len,
                  size_t esize, void* dst, const ReadSubPiece& read_sub);

}  // namespace ncafs::agg
