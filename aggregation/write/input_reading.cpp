#include "aggregation/write/input_reading.hpp"

#include <filesystem>
#include <optional>

#include "aggregation/read/path_policy.hpp"
#include "aggregation/write/aggregated_coordinates.hpp"
#include "aggregation/write/compared_values.hpp"
#include "aggregation/write/input_comparison.hpp"
#include "aggregation/write/ordered_parallel.hpp"
#include "codecs/open_dataset.hpp"

namespace ncafs::agg::cf_write {

namespace fs = std::filesystem;

namespace {

std::vector<VarInfo> var_infos(const Dataset& ds) {
    std::vector<VarInfo> out;
    for (const auto& v : ds.variables) {
        VarInfo vi{v.name, v.type, {}, v.attributes};
        for (size_t id : v.dimids) vi.dims.push_back(ds.dimensions[id].name);
        out.push_back(std::move(vi));
    }
    return out;
}

// F's dimensions, global attributes and variables, moved out of a dataset read for them alone.
void take_metadata(FileInfo& F, Dataset&& ds) {
    F.vars.reserve(ds.variables.size());
    for (auto& v : ds.variables) {
        VarInfo vi{std::move(v.name), v.type, {}, std::move(v.attributes)};
        vi.dims.reserve(v.dimids.size());
        for (size_t id : v.dimids) vi.dims.push_back(ds.dimensions[id].name);
        F.vars.push_back(std::move(vi));
    }
    F.dims = std::move(ds.dimensions);
    F.globals = std::move(ds.attributes);
}

void release_metadata(FileInfo& F) {
    std::vector<Dimension>().swap(F.dims);
    std::vector<Attribute>().swap(F.globals);
    std::vector<VarInfo>().swap(F.vars);
}

// File 0 is the reference: the default aggregated dimension, the aggregated variables, their encodings.
void take_reference(WriterState& st, std::shared_ptr<const Dataset> ds) {
    st.reference = ds;
    const FileInfo& F = st.files[0];
    if (st.agg_dims.empty()) {
        auto u = ds->unlimited_dimension();
        if (!u) throw UsageError(F.path + ": has no unlimited dimension: name the aggregated dimension(s) with --dim");
        st.agg_dims.push_back(ds->dimensions[*u].name);
        st.coord_units.resize(1), st.coord_calendar.resize(1);
    }
    for (const auto& v : F.vars)
        for (const auto& d : v.dims)
            if (st.is_agg_dim(d)) st.aggregated_vars.insert(v.name);
    for (const auto& v : F.vars)
        if (st.aggregated_vars.count(v.name))
            for (const auto& a : v.attributes)
                if (kEncodingAttributes.count(a.name)) st.encodings[v.name][a.name].add(F.path, value_text(&a));
}

// The reference's non-aggregated variables: their values, which the others must equal.
void keep_non_aggregated_values(WriterState& st, const Dataset& ds) {
    for (const auto& v : ds.variables)
        if (!st.aggregated_vars.count(v.name) && v.source) st.ref_values[v.name] = read_whole(*v.source);
}

// A fragment's URI: relative to the output's directory unless absolute ones are asked for.
std::string fragment_uri(const std::string& file, const std::string& out_path, bool absolute) {
    const std::string dir = fs::path(out_path).parent_path().string();
    if (!absolute) {
        fs::path rel = fs::path(file).lexically_relative(dir);
        if (!rel.empty()) {
            std::string r = uri_path_encode(rel.string());
            auto colon = r.find(':'), slash = r.find('/');
            if (colon != std::string::npos && (slash == std::string::npos || colon < slash)) r = "./" + r;
            return r;
        }
    }
    return "file://" + uri_path_encode(file);
}

// lexically_normal_absolute of an input, against the current directory taken once.
std::string input_path(const WriterState& st, const std::string& name) {
    const bool relative = name.empty() || name[0] != '/';
    return lexically_normal_absolute(relative && !st.cwd.empty() ? st.cwd + "/" + name : name);
}

UsageError output_is_input(const WriterState& st) { return UsageError("the output " + st.opt.output + " is also an input"); }

void report_progress(const WriterState& st, size_t fi) {
    if (st.opt.progress) st.opt.progress(fi + 1, st.files.size());
}

// File 0, the reference: its header, coordinates and non-aggregated values, kept.
void read_reference(WriterState& st, const std::string& name) {
    FileInfo& F = st.files[0];
    F.path = input_path(st, name);
    if (F.path == st.out_path) throw output_is_input(st);
    std::shared_ptr<const Dataset> ds;
    try {
        ds = std::make_shared<const Dataset>(open_dataset(F.path));
    } catch (const std::exception& e) {
        st.problems.add(e.what());
        return;
    }
    st.file_uris[0] = fragment_uri(F.path, st.out_path, st.opt.absolute_uris);
    F.dims = ds->dimensions;
    F.globals = ds->attributes;
    F.vars = var_infos(*ds);
    take_reference(st, ds);
    auto dims = read_aggregated_dims(st, *ds);
    place_coordinates(st, 0, dims);
    keep_non_aggregated_values(st, *ds);
    report_progress(st, 0);
}

// Another input as a reader thread sees it; merged by merge_input.
struct InputRead {
    FileInfo info;  // path; its metadata only while compared
    std::string uri;
    std::optional<std::string> open_error;
    std::vector<DimRead> dims;
    Findings found;
};

// Reads and compares one file; touches no shared state (the reference is read only).
InputRead read_input(const WriterState& st, const std::string& name) {
    InputRead r;
    FileInfo& F = r.info;
    F.path = input_path(st, name);
    if (F.path == st.out_path) return r;  // refused in order by merge_input
    std::optional<Dataset> ds;
    try {
        ds.emplace(open_dataset(F.path));
    } catch (const std::exception& e) {
        r.open_error = e.what();
        return r;
    }
    r.uri = fragment_uri(F.path, st.out_path, st.opt.absolute_uris);
    r.dims = read_aggregated_dims(st, *ds);
    compare_non_aggregated_values(st, F.path, *ds, r.found);
    if (st.reference) {
        take_metadata(F, std::move(*ds));
        compare_with_reference(st.files[0], F, Reference{st.agg_dims, st.aggregated_vars}, r.found);
        release_metadata(F);  // linear memory: 1,000,000 files keep only paths, lengths and coordinates
    }
    return r;
}

// What read_input found, recorded in the WriterState (file order).
void merge_input(WriterState& st, size_t fi, InputRead&& r) {
    FileInfo& F = st.files[fi];
    F = std::move(r.info);
    if (F.path == st.out_path) throw output_is_input(st);
    if (r.open_error) {
        st.problems.add(std::move(*r.open_error));
        return;
    }
    st.file_uris[fi] = std::move(r.uri);
    place_coordinates(st, fi, r.dims);
    for (auto& p : r.found.problems) st.problems.add(std::move(p));
    for (auto& w : r.found.warnings) st.summary.warnings.push_back(std::move(w));
    for (auto& e : r.found.encodings) st.encodings[*e.var][*e.attribute].add(F.path, std::move(e.value));
    for (const std::string* g : r.found.differing_globals) ++st.global_differences[*g];
    report_progress(st, fi);
}

}  // namespace

std::vector<VarInfo> read_variables(const std::string& path) { return var_infos(open_dataset(path)); }

void read_inputs(WriterState& st, const std::vector<std::string>& files_in) {
    st.files.resize(files_in.size());
    st.file_uris.resize(files_in.size());  // made by the reader threads
    st.agg_dims = st.opt.dims;
    st.coord_units.resize(st.agg_dims.size());
    st.coord_calendar.resize(st.agg_dims.size());
    read_reference(st, files_in[0]);
    constexpr size_t kReadAhead = 4096;  // files read but not yet merged, at most
    produce_in_parallel_consume_in_order<InputRead>(
        files_in.size() - 1, reader_threads(), kReadAhead,
        [&](size_t k) { return read_input(st, files_in[k + 1]); },
        [&](size_t k, InputRead&& r) { merge_input(st, k + 1, std::move(r)); });
    st.throw_if_problems();
    for (const auto& [name, values] : st.ref_values)
        if (values.size() / std::max<size_t>(1, type_size(st.reference->find_variable(name)->type)) > kCompareLimit)
            st.summary.warnings.push_back("non-aggregated variable " + name + " is too big to compare; copied from " +
                                          st.files[0].path);
}

}  // namespace ncafs::agg::cf_write
