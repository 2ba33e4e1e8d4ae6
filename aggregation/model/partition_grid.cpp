#include "aggregation/model/partition_grid.hpp"

#include <algorithm>
#include <climits>

#include "aggregation/model/error.hpp"
#include "codecs/checked_math.hpp"

namespace ncafs::agg {

namespace {
constexpr uint64_t kMaxCellsFloor = uint64_t{1} << 22;

std::string box_text(const Aggregate& agg, const Fragment& f) {
    std::string s;
    for (size_t d = 0; d < f.start.size(); ++d)
        s += (d ? " " : "") + agg.dims[d] + "[" + std::to_string(f.start[d]) + ":" + std::to_string(f.start[d] + f.count[d]) + ")";
    return s.empty() ? "(scalar)" : s;
}

[[noreturn]] void overlap(const Aggregate& agg, size_t a, size_t b) {
    throw AggregationError(agg.file, agg.fragments[b].where,
                           "overlaps " + agg.fragments[a].where.substr(agg.fragments[a].where.rfind(' ') + 1) + " (" +
                               box_text(agg, agg.fragments[b]) + " meets " + box_text(agg, agg.fragments[a]) + ")");
}

// The grid indexes cells_ by the boxes: a box outside the master (or a
// master whose element count wraps) would write past the table.
void check_boxes(const Aggregate& agg) {
    (void)agg.element_count();  // throws when the master shape overflows 64 bits
    if (agg.fragments.size() > static_cast<size_t>(INT32_MAX))
        throw AggregationError(agg.file, agg.name, "too many fragments (" + std::to_string(agg.fragments.size()) + ")");
    for (const auto& f : agg.fragments) {
        if (f.start.size() != agg.shape.size() || f.count.size() != agg.shape.size())
            throw AggregationError(agg.file, f.where, "box rank differs from the master's");
        for (size_t d = 0; d < agg.shape.size(); ++d)
            if (!checked::fits_in(f.start[d], f.count[d], agg.shape[d]))
                throw AggregationError(agg.file, f.where, "box " + box_text(agg, f) + " lies outside the master");
    }
}
}  // namespace

PartitionGrid::PartitionGrid(const Aggregate& agg) : agg_(agg) {
    check_boxes(agg);
    const size_t rank = agg.shape.size();
    cuts_.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
        auto& c = cuts_[d];
        c.push_back(0);
        c.push_back(agg.shape[d]);
        for (const auto& f : agg.fragments) {
            c.push_back(f.start[d]);
            c.push_back(f.start[d] + f.count[d]);
        }
        std::sort(c.begin(), c.end());
        c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    uint64_t ncells = 1;
    bool fits = true;
    const uint64_t limit = std::max<uint64_t>(kMaxCellsFloor, 8 * agg.fragments.size());
    cell_stride_.assign(rank, 1);
    for (size_t d = rank; d-- > 0;) {
        cell_stride_[d] = ncells;
        uint64_t n = cuts_[d].size() - 1;
        if (n != 0 && ncells > limit / n) fits = false;
        ncells *= std::max<uint64_t>(n, 1);
    }
    if (fits) {
        table_ok_ = true;
        cells_.assign(ncells, -1);
        for (size_t i = 0; i < agg.fragments.size(); ++i) {
            const auto& f = agg.fragments[i];
            std::vector<uint64_t> lo(rank), hi(rank);
            for (size_t d = 0; d < rank; ++d) {
                const auto& c = cuts_[d];
                lo[d] = static_cast<uint64_t>(std::lower_bound(c.begin(), c.end(), f.start[d]) - c.begin());
                hi[d] = static_cast<uint64_t>(std::lower_bound(c.begin(), c.end(), f.start[d] + f.count[d]) - c.begin());
            }
            std::vector<uint64_t> at = lo;
            while (true) {
                uint64_t cell = 0;
                for (size_t d = 0; d < rank; ++d) cell += at[d] * cell_stride_[d];
                if (cells_[cell] >= 0) overlap(agg, static_cast<size_t>(cells_[cell]), i);
                cells_[cell] = static_cast<int32_t>(i);
                size_t d = rank;
                while (d-- > 0) {
                    if (++at[d] < hi[d]) break;
                    at[d] = lo[d];
                }
                if (d == static_cast<size_t>(-1)) break;
            }
        }
    } else if (agg.fragments.size() <= 4000) {
        // Pairwise overlap test for irregular layouts of moderate size.
        for (size_t a = 0; a < agg.fragments.size(); ++a)
            for (size_t b = a + 1; b < agg.fragments.size(); ++b) {
                bool meet = true;
                for (size_t d = 0; d < rank && meet; ++d)
                    meet = agg.fragments[a].start[d] < agg.fragments[b].start[d] + agg.fragments[b].count[d] &&
                           agg.fragments[b].start[d] < agg.fragments[a].start[d] + agg.fragments[a].count[d];
                if (meet) overlap(agg, a, b);
            }
    }
}

bool PartitionGrid::for_each_fragment(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                      const std::function<void(size_t)>& f) const {
    const size_t rank = agg_.shape.size();
    for (size_t d = 0; d < rank; ++d)
        if (!checked::fits_in(start[d], count[d], agg_.shape[d]))
            throw UsageError(agg_.file + ": " + agg_.name + ": hyperslab outside the aggregated shape");
    const uint64_t volume = element_count(count);  // <= the master's count, checked at construction
    if (volume == 0) return false;
    if (!table_ok_) {
        uint64_t covered = 0;
        for (size_t i = 0; i < agg_.fragments.size(); ++i) {
            const auto& fr = agg_.fragments[i];
            uint64_t v = 1;
            for (size_t d = 0; d < rank; ++d) {
                uint64_t lo = std::max(start[d], fr.start[d]), hi = std::min(start[d] + count[d], fr.start[d] + fr.count[d]);
                v = hi > lo ? v * (hi - lo) : 0;
            }
            if (v) {
                covered += v;
                f(i);
            }
        }
        return covered < volume;
    }
    // Cell index ranges along each dim, by binary search over the cuts.
    std::vector<uint64_t> lo(rank), hi(rank);
    for (size_t d = 0; d < rank; ++d) {
        const auto& c = cuts_[d];
        lo[d] = static_cast<uint64_t>(std::upper_bound(c.begin(), c.end(), start[d]) - c.begin()) - 1;
        hi[d] = static_cast<uint64_t>(std::lower_bound(c.begin(), c.end(), start[d] + count[d]) - c.begin());
    }
    bool uncovered = false;
    int32_t last = -1;
    std::vector<int32_t> seen;
    std::vector<uint64_t> at = lo;
    while (true) {
        uint64_t cell = 0;
        for (size_t d = 0; d < rank; ++d) cell += at[d] * cell_stride_[d];
        int32_t i = cells_[cell];
        if (i < 0) uncovered = true;
        else if (i != last) {
            seen.push_back(i);
            last = i;
        }
        size_t d = rank;
        while (d-- > 0) {
            if (++at[d] < hi[d]) break;
            at[d] = lo[d];
        }
        if (d == static_cast<size_t>(-1)) break;
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t i : seen) f(static_cast<size_t>(i));
    return uncovered;
}

std::optional<size_t> PartitionGrid::fragment_at(std::span<const uint64_t> index) const {
    std::optional<size_t> found;
    std::vector<uint64_t> one(index.size(), 1);
    for_each_fragment(index, one, [&](size_t i) { found = i; });
    return found;
}

}  // namespace ncafs::agg
