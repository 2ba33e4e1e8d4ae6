#include "aggregation/write/fragment_placement.hpp"

#include <algorithm>
#include <cmath>

namespace ncafs::agg::cf_write {

namespace {

bool nearly_equal(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

// The files in order of their first coordinate value along d (input order without coordinates).
std::vector<size_t> order_by_coordinate(const WriterState& st, size_t d, bool have_coords, bool& decreasing) {
    const auto& files = st.files;
    std::vector<size_t> order(files.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    decreasing = false;
    if (!have_coords) return order;
    for (const auto& F : files)
        if (F.coords[d].size() >= 2) {
            decreasing = F.coords[d][1] < F.coords[d][0];
            break;
        }
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        double a = files[x].coords[d].empty() ? 0 : files[x].coords[d][0];
        double b = files[y].coords[d].empty() ? 0 : files[y].coords[d][0];
        return decreasing ? a > b : a < b;
    });
    return order;
}

// F starts a new block after prev's along d: it must start after prev ends.
void check_follows(WriterState& st, size_t d, const FileInfo& F, const FileInfo& prev, bool decreasing) {
    double last = prev.coords[d].back(), first = F.coords[d].front();
    if (decreasing ? !(first < last) : !(first > last))
        st.problems.add(F.path + ": " + st.agg_dims[d] + " values start at " + std::to_string(first) +
                        ", overlapping or not after " + prev.path + " (ends at " + std::to_string(last) + ")");
}

// F shares prev's block along d: it must have the same length and coordinate values.
void check_same_block(WriterState& st, size_t d, const FileInfo& F, const FileInfo& prev) {
    if (F.agg_len[d] == prev.agg_len[d] && F.coords[d] == prev.coords[d]) return;
    bool equal = F.agg_len[d] == prev.agg_len[d];
    for (size_t j = 0; equal && j < F.coords[d].size(); ++j) equal = nearly_equal(F.coords[d][j], prev.coords[d][j]);
    if (!equal)
        st.problems.add(F.path + ": " + st.agg_dims[d] + " values differ from " + prev.path +
                        ", which starts at the same value");
}

// Each file's block along aggregated dim d: files whose first coordinate value is equal share one.
void place_along(WriterState& st, size_t d) {
    auto& files = st.files;
    bool empty_file = false;  // an UNLIMITED dimension without records: nothing to place, no coordinate to order by
    for (const auto& F : files)
        if (F.agg_len[d] == 0) {
            st.problems.add(F.path + ": dimension " + st.agg_dims[d] +
                            " has length 0 (no records yet): nothing to aggregate from it; leave it out of the inputs");
            empty_file = true;
        }
    if (empty_file) return;
    const bool have_coords = std::all_of(files.begin(), files.end(),
                                         [&](const FileInfo& F) { return !F.coords[d].empty(); });
    if (!have_coords && st.agg_dims.size() > 1) {
        st.problems.add("dimension " + st.agg_dims[d] + ": some files have no coordinate variable " + st.agg_dims[d] +
                        "; cannot place fragments along several dimensions");
        return;
    }
    bool decreasing = false;
    const std::vector<size_t> order = order_by_coordinate(st, d, have_coords, decreasing);
    size_t block = 0;
    const FileInfo* prev = nullptr;
    for (size_t k = 0; k < order.size(); ++k) {
        FileInfo& F = files[order[k]];
        if (F.position.size() < st.agg_dims.size()) F.position.resize(st.agg_dims.size());
        if (prev && have_coords && nearly_equal(F.coords[d][0], prev->coords[d][0])) {
            check_same_block(st, d, F, *prev);
        } else {
            if (prev) ++block;
            if (prev && have_coords) check_follows(st, d, F, *prev, decreasing);
            st.block_len[d].push_back(F.agg_len[d]);
            prev = &F;
        }
        F.position[d] = block;
    }
}

// "time block 3, lat block 0": the blocks of grid cell c.
std::string cell_name(const WriterState& st, uint64_t c) {
    const auto& nf = st.nf;
    std::vector<uint64_t> ix(nf.size());
    for (size_t d = nf.size(); d-- > 0;) ix[d] = c % nf[d], c /= nf[d];
    std::string idx;
    for (size_t d = 0; d < nf.size(); ++d) idx += (d ? ", " : "") + st.agg_dims[d] + " block " + std::to_string(ix[d]);
    return idx;
}

// The grid of blocks: every cell covered by exactly one file.
void fill_grid(WriterState& st) {
    const auto& nf = st.nf;
    uint64_t cells = 1;
    for (uint64_t n : nf) cells *= n;
    st.grid.assign(cells, -1);
    for (size_t fi = 0; fi < st.files.size(); ++fi) {
        uint64_t at = 0;
        for (size_t d = 0; d < nf.size(); ++d) at = at * nf[d] + st.files[fi].position[d];
        if (st.grid[at] >= 0)
            st.problems.add(st.files[fi].path + ": covers the same place as " +
                            st.files[static_cast<size_t>(st.grid[at])].path);
        else
            st.grid[at] = static_cast<int64_t>(fi);
    }
    for (uint64_t c = 0; c < cells; ++c)
        if (st.grid[c] < 0) st.problems.add("no file covers " + cell_name(st, c) + " (the files do not tile a hyperrectangle)");
}

}  // namespace

void place_fragments(WriterState& st) {
    st.block_len.assign(st.agg_dims.size(), {});
    for (size_t d = 0; d < st.agg_dims.size(); ++d) place_along(st, d);
    st.throw_if_problems();
    for (const auto& b : st.block_len) st.nf.push_back(b.size());
    fill_grid(st);
    st.throw_if_problems();
    st.summary.fragments_per_dim = st.nf;
}

}  // namespace ncafs::agg::cf_write
