#include "aggregation/model/fragment_grid.hpp"

#include <algorithm>
#include <climits>

#include "aggregation/model/error.hpp"
#include "codecs/checked_math.hpp"

namespace ncafs::agg {

namespace {
constexpr uint64_t kMaxCellsFloor = uint64_t{1} << 22;

std::string box_text(const Aggregate& agg, size_t i) {
    const FragmentTable& t = agg.fragments;
    std::string s;
    for (size_t d = 0; d < t.rank(); ++d)
        s += (d ? " " : "") + agg.dims[d] + "[" + std::to_string(t.start(i, d)) + ":" + std::to_string(t.start(i, d) + t.count(i, d)) + ")";
    return s.empty() ? "(scalar)" : s;
}

[[noreturn]] void overlap(const Aggregate& agg, size_t a, size_t b) {
    const std::string where_a = agg.fragments.where(a);
    throw AggregationError(agg.file, agg.fragments.where(b),
                           "overlaps " + where_a.substr(where_a.rfind(' ') + 1) + " (" + box_text(agg, b) + " meets " +
                               box_text(agg, a) + ")");
}

// The grid indexes cells_ by the boxes: a box outside the master (or a
// master whose element count wraps) would write past the table.
void check_boxes(const Aggregate& agg) {
    (void)agg.element_count();  // throws when the master shape overflows 64 bits
    if (agg.fragments.size() > static_cast<size_t>(INT32_MAX))
        throw AggregationError(agg.file, agg.name, "too many fragments (" + std::to_string(agg.fragments.size()) + ")");
    const FragmentTable& t = agg.fragments;
    if (!t.empty() && t.rank() != agg.shape.size())
        throw AggregationError(agg.file, t.where(0), "box rank differs from the master's");
    for (size_t i = 0; i < t.size(); ++i)
        for (size_t d = 0; d < agg.shape.size(); ++d)
            if (!checked::fits_in(t.start(i, d), t.count(i, d), agg.shape[d]))
                throw AggregationError(agg.file, t.where(i), "box " + box_text(agg, i) + " lies outside the master");
}
}  // namespace

FragmentGrid::FragmentGrid(const Aggregate& agg) : agg_(agg) {
    check_boxes(agg);
    const size_t rank = agg.shape.size();
    cuts_.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
        auto& c = cuts_[d];
        c.push_back(0);
        c.push_back(agg.shape[d]);
        c.reserve(2 * agg.fragments.size() + 2);
        for (size_t i = 0; i < agg.fragments.size(); ++i) {
            c.push_back(agg.fragments.start(i, d));
            c.push_back(agg.fragments.start(i, d) + agg.fragments.count(i, d));
        }
        std::sort(c.begin(), c.end());
        c.erase(std::unique(c.begin(), c.end()), c.end());
        c.shrink_to_fit();  // a million partitions along one dim leave few cuts along the others
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
            const FragmentTable& f = agg.fragments;
            std::vector<uint64_t> lo(rank), hi(rank);
            for (size_t d = 0; d < rank; ++d) {
                const auto& c = cuts_[d];
                const uint64_t first = f.start(i, d), end = first + f.count(i, d);
                lo[d] = static_cast<uint64_t>(std::lower_bound(c.begin(), c.end(), first) - c.begin());
                hi[d] = static_cast<uint64_t>(std::lower_bound(c.begin(), c.end(), end) - c.begin());
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
                    meet = agg.fragments.start(a, d) < agg.fragments.start(b, d) + agg.fragments.count(b, d) &&
                           agg.fragments.start(b, d) < agg.fragments.start(a, d) + agg.fragments.count(a, d);
                if (meet) overlap(agg, a, b);
            }
    }
}

bool FragmentGrid::for_each_fragment(std::span<const uint64_t> start, std::span<const uint64_t> count,
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
            const FragmentTable& fr = agg_.fragments;
            uint64_t v = 1;
            for (size_t d = 0; d < rank; ++d) {
                uint64_t lo = std::max(start[d], fr.start(i, d)),
                         hi = std::min(start[d] + count[d], fr.start(i, d) + fr.count(i, d));
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

std::optional<size_t> FragmentGrid::fragment_at(std::span<const uint64_t> index) const {
    std::optional<size_t> found;
    std::vector<uint64_t> one(index.size(), 1);
    for_each_fragment(index, one, [&](size_t i) { found = i; });
    return found;
}

}  // namespace ncafs::agg
