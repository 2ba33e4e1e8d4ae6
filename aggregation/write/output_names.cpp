#include "aggregation/write/output_names.hpp"

#include <algorithm>

namespace ncafs::agg::cf_write {

namespace {

// Each fragment's file, C order over the signature's dims (rows); dims it lacks at block 0.
std::vector<size_t> fragment_files_of(const WriterState& st, const std::vector<std::string>& dims,
                                      const std::vector<std::vector<uint64_t>>& rows) {
    uint64_t n = 1;
    for (const auto& r : rows) n *= r.size();
    std::vector<size_t> files;
    files.reserve(n);
    std::vector<uint64_t> ix(dims.size());
    for (uint64_t c = 0; c < n; ++c) {
        uint64_t rest = c;
        for (size_t k = dims.size(); k-- > 0;) ix[k] = rest % rows[k].size(), rest /= rows[k].size();
        uint64_t at = 0;
        for (size_t d = 0; d < st.agg_dims.size(); ++d) {
            auto vi = std::find(dims.begin(), dims.end(), st.agg_dims[d]);
            at = at * st.nf[d] + (vi == dims.end() ? 0 : ix[static_cast<size_t>(vi - dims.begin())]);
        }
        files.push_back(static_cast<size_t>(st.grid[at]));
    }
    return files;
}

// The signature of aggregated variable v's dimensions: names, map rows and fragment files.
Signature plan_signature(WriterState& st, const VarInfo& v) {
    Signature s;
    s.dims = v.dims;
    s.map_name = unique_name("fragment_map_" + v.name, st.taken);
    s.uris_name = unique_name("fragment_uris_" + v.name, st.taken);
    uint64_t widest = 1;
    for (const auto& d : v.dims) {
        auto ai = std::find(st.agg_dims.begin(), st.agg_dims.end(), d);
        if (ai != st.agg_dims.end()) s.rows.push_back(st.block_len[static_cast<size_t>(ai - st.agg_dims.begin())]);
        else s.rows.push_back({dim_len(st, d)});
        widest = std::max<uint64_t>(widest, s.rows.back().size());
        if (!st.fragment_dim.count(d)) st.fragment_dim[d] = unique_name("f_" + d, st.taken);
        s.fdims.push_back(st.fragment_dim[d]);
    }
    const uint64_t nrows = v.dims.size();
    if (!st.map_j_dims.count(nrows)) st.map_j_dims[nrows] = unique_name("a_map_j" + std::to_string(nrows), st.taken);
    if (!st.map_i_dims.count(widest)) st.map_i_dims[widest] = unique_name("a_map_i" + std::to_string(widest), st.taken);
    s.map_j = st.map_j_dims[nrows];
    s.map_i = st.map_i_dims[widest];
    s.fragment_files = fragment_files_of(st, v.dims, s.rows);
    if (st.opt.classic) s.strlen_dim = unique_name("strlen_" + s.uris_name, st.taken);
    return s;
}

}  // namespace

std::string unique_name(const std::string& base, std::set<std::string>& taken) {
    std::string n = base;
    for (int i = 1; taken.count(n); ++i) n = base + "_" + std::to_string(i);
    taken.insert(n);
    return n;
}

uint64_t dim_len(const WriterState& st, const std::string& d) {
    if (st.agg_total.count(d)) return st.agg_total.at(d);
    for (const auto& x : st.files[0].dims)
        if (x.name == d) return x.length;
    return 0;
}

size_t uri_width(const WriterState& st, const std::vector<size_t>& picks) {
    size_t w = 1;
    for (size_t f : picks) w = std::max(w, st.file_uris[f].size());
    return w;
}

void plan_names(WriterState& st) {
    const FileInfo& R = st.files[0];
    for (const auto& d : R.dims) st.taken.insert(d.name);
    for (const auto& v : R.vars) st.taken.insert(v.name);
    for (size_t d = 0; d < st.agg_dims.size(); ++d) {
        uint64_t t = 0;
        for (uint64_t l : st.block_len[d]) t += l;
        st.agg_total[st.agg_dims[d]] = t;
    }
    for (const auto& v : R.vars) {
        if (!st.aggregated_vars.count(v.name) || st.sig_of.count(v.dims)) continue;
        Signature s = plan_signature(st, v);
        st.sig_of[v.dims] = st.sigs.size();
        st.sigs.push_back(std::move(s));
    }
}

}  // namespace ncafs::agg::cf_write
