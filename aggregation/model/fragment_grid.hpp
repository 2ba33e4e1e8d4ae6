// Finds the fragments a master hyperslab touches by binary search over the
// partition boundaries of each dimension. Boundaries of all fragments cut
// master space into cells; a cell table maps each cell to its fragment (-1
// where no fragment covers it). A hyperrectangular partition matrix (G1-G5)
// gives one cell per partition. Should the cuts of an irregular layout make
// the table too big, lookups fall back to testing every fragment.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "aggregation/model/aggregate.hpp"

namespace ncafs::agg {

class FragmentGrid {
public:
    // Throws AggregationError when two fragments overlap, a box lies outside
    // the master or the master's element count overflows 64 bits.
    explicit FragmentGrid(const Aggregate& agg);

    // Calls f(i) once for every fragment i whose box meets [start, start+count);
    // returns true when part of the box is covered by no fragment.
    bool for_each_fragment(std::span<const uint64_t> start, std::span<const uint64_t> count,
                           const std::function<void(size_t)>& f) const;

    // The fragment holding one master element.
    std::optional<size_t> fragment_at(std::span<const uint64_t> index) const;

    bool uses_cell_table() const { return table_ok_; }

private:
    const Aggregate& agg_;
    std::vector<std::vector<uint64_t>> cuts_;  // per dim: sorted boundaries incl. 0 and length
    std::vector<uint64_t> cell_stride_;
    std::vector<int32_t> cells_;
    bool table_ok_ = false;
};

}  // namespace ncafs::agg
