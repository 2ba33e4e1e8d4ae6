#include "aggregation/write/cf_writer.hpp"

#include <netcdf.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/read/path_policy.hpp"
#include "aggregation/write/ordered_parallel.hpp"
#include "aggregation/model/calendar.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "codecs/array_source.hpp"
#include "codecs/dataset.hpp"
#include "codecs/netcdf/netcdf_writer.hpp"
#include "codecs/open_dataset.hpp"
#include "io/private_folder.hpp"
#include "io/percent_encode.hpp"

namespace ncafs::agg {

// ncafs aggregate, one step per function; write_cf_aggregation (at the end)
// runs them in order over a WriterState they share:
//   1 read_inputs                  headers, aggregated-dim coordinates, small plain values, URIs; file 0 is the reference
//   2 report_metadata_differences  global attributes and per-file encodings, as warnings
//   3 place_fragments              order along each aggregated dimension, then tile the grid
//   4 plan_names                   the output's names, one signature per dimension list
//   5 write_output                 define and fill a temporary file, renamed into place

namespace fs = std::filesystem;

std::string uri_path_encode(const std::string& path) { return percent_encode(path, "-._~!$&'()*+,;=:@/"); }

namespace {

// Non-aggregated variables up to this many elements are compared across all
// files; larger ones only by their metadata (said in a warning).
constexpr uint64_t kCompareLimit = uint64_t{1} << 20;
constexpr size_t kMaxProblemLines = 200;

const std::set<std::string> kEncodingAttributes = {"scale_factor", "add_offset", "_FillValue", "missing_value",
                                                   "valid_min", "valid_max", "valid_range"};

struct VarInfo {
    std::string name;
    NcType type = NcType::Double;
    std::vector<std::string> dims;
    std::vector<Attribute> attributes;
    const Attribute* find(const std::string& n) const {
        for (const auto& a : attributes)
            if (a.name == n) return &a;
        return nullptr;
    }
};

struct FileInfo {
    std::string path;  // absolute, lexically normal
    std::vector<Dimension> dims;
    std::vector<Attribute> globals;
    std::vector<VarInfo> vars;
    std::vector<uint64_t> agg_len;            // per aggregated dim
    std::vector<std::vector<double>> coords;  // per aggregated dim, in the reference units (empty: no coordinate)
    std::vector<size_t> position;             // per aggregated dim: fragment index (after ordering)
};

std::string text(const Attribute* a) {
    if (!a || a->type != NcType::Char) return {};
    std::string t = a->as_text();
    while (!t.empty() && t.back() == '\0') t.pop_back();
    return t;
}

// A char attribute's bytes as stored (trailing NULs included).
std::string stored_text(const Attribute& a) { return {reinterpret_cast<const char*>(a.values.data()), a.values.size()}; }

std::string value_text(const Attribute* a) {
    if (!a) return "(none)";
    if (a->type == NcType::Char) return "\"" + text(a) + "\"";
    std::ostringstream o;
    for (size_t i = 0; i < a->length(); ++i) o << (i ? "," : "") << a->as_double(i);
    return o.str();
}

bool same_attribute(const Attribute* a, const Attribute* b) {
    if (!a || !b) return a == b;
    if (a->type == NcType::Char && b->type == NcType::Char) return text(a) == text(b);
    return a->type == b->type && a->values == b->values;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

std::vector<uint8_t> read_all(const ArraySource& s) {
    std::vector<uint8_t> out(s.element_count() * type_size(s.type()));
    std::vector<uint64_t> start(s.shape().size(), 0);
    if (!out.empty()) s.read(start, s.shape(), ByteOrder::Native, out.data());
    return out;
}

class Problems {
public:
    void add(std::string line) {
        ++count_;
        if (lines_.size() < kMaxProblemLines) lines_.push_back(std::move(line));
    }
    bool empty() const { return count_ == 0; }
    std::string text() const {
        std::string t;
        for (const auto& l : lines_) t += l + "\n";
        if (count_ > lines_.size()) t += "... and " + std::to_string(count_ - lines_.size()) + " more\n";
        return t;
    }

private:
    std::vector<std::string> lines_;
    size_t count_ = 0;
};

std::string unique_name(std::string base, std::set<std::string>& taken) {
    std::string n = base;
    for (int i = 1; taken.count(n); ++i) n = base + "_" + std::to_string(i);
    taken.insert(n);
    return n;
}

struct Reference {
    const std::vector<std::string>& agg_dims;
    const std::set<std::string>& aggregated_vars;  // variables spanning an aggregated dimension
};

// Values of one encoding attribute of one variable across the files:
// value -> (first file with it, number of files with it); O(distinct values).
struct EncodingValues {
    std::map<std::string, std::pair<std::string, size_t>> by_value;
    size_t files = 0;
    void add(const std::string& file, std::string value) {
        auto [it, added] = by_value.try_emplace(std::move(value), file, 0);
        ++it->second.second;
        ++files;
    }
};
using Encodings = std::map<std::string, std::map<std::string, EncodingValues>>;  // var -> attr -> values

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

std::shared_ptr<const Dataset> open_metadata(const std::string& path) {
    return std::make_shared<const Dataset>(open_dataset(path));
}

void release_metadata(FileInfo& F) {
    std::vector<Dimension>().swap(F.dims);
    std::vector<Attribute>().swap(F.globals);
    std::vector<VarInfo>().swap(F.vars);
}

// What one file's comparisons found, merged into the WriterState in file
// order (a reader thread finds, the merge records: the same lines, in the
// same order, as reading one file after another).
struct Findings {
    struct Encoding {
        const std::string* var;        // the reference's variable name
        const std::string* attribute;  // an element of kEncodingAttributes
        std::string value;
    };
    std::vector<std::string> problems;
    std::vector<std::string> warnings;
    std::vector<Encoding> encodings;
    std::vector<const std::string*> differing_globals;  // the reference's attribute names
};

// The names of two attribute lists, sorted, once each (as a std::set
// would give them, without a node per name).
std::vector<std::string_view> attribute_names(const std::vector<Attribute>& a, const std::vector<Attribute>& b) {
    std::vector<std::string_view> names;
    names.reserve(a.size() + b.size());
    for (const auto& x : a) names.push_back(x.name);
    for (const auto& x : b) names.push_back(x.name);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

// Differences of F's dimensions, variables and attributes from the
// reference file R: problems, warnings (units converted on read), per-file
// encodings and the differing global attributes.
void compare_with_reference(const FileInfo& R, const FileInfo& F, const Reference& ref, Findings& found) {
    auto& problems = found.problems;
    auto& warnings = found.warnings;
    const auto& aggregated_vars = ref.aggregated_vars;
    auto is_agg_dim = [&](const std::string& d) {
        return std::find(ref.agg_dims.begin(), ref.agg_dims.end(), d) != ref.agg_dims.end();
    };
    for (const auto& rd : R.dims) {
        auto it = std::find_if(F.dims.begin(), F.dims.end(), [&](const Dimension& x) { return x.name == rd.name; });
        if (it == F.dims.end()) problems.push_back(F.path + ": has no dimension " + rd.name + " (" + R.path + " has)");
        else if (!is_agg_dim(rd.name) && it->length != rd.length)
            problems.push_back(F.path + ": dimension " + rd.name + " has length " + std::to_string(it->length) + ", " +
                               R.path + " has " + std::to_string(rd.length));
    }
    for (const auto& fd : F.dims)
        if (std::none_of(R.dims.begin(), R.dims.end(), [&](const Dimension& x) { return x.name == fd.name; }))
            problems.push_back(F.path + ": has a dimension " + fd.name + " that " + R.path + " lacks");
    std::vector<const VarInfo*> fv;  // F's variables by name
    fv.reserve(F.vars.size());
    for (const auto& v : F.vars) fv.push_back(&v);
    auto by_name = [](const VarInfo* a, const VarInfo* b) { return a->name < b->name; };
    std::sort(fv.begin(), fv.end(), by_name);  // names are unique in a dataset
    for (const auto& rv : R.vars) {
        auto it = std::lower_bound(fv.begin(), fv.end(), &rv, by_name);
        if (it == fv.end() || (*it)->name != rv.name) {
            problems.push_back(F.path + ": has no variable " + rv.name);
            continue;
        }
        const VarInfo& v = **it;
        const bool agg = aggregated_vars.count(rv.name) > 0;
        if (v.dims != rv.dims)
            problems.push_back(F.path + ": variable " + rv.name + " has other dimensions than in " + R.path);
        if (v.type != rv.type) {
            if (agg && v.type != NcType::Char && rv.type != NcType::Char)  // CF-1.13: any numeric type
                warnings.push_back(F.path + ": variable " + rv.name + " is " + std::string(type_name(v.type)) + ", " +
                                   R.path + " has " + std::string(type_name(rv.type)) + " (converted on read)");
            else
                problems.push_back(F.path + ": variable " + rv.name + " has type " + std::string(type_name(v.type)) +
                                   ", " + R.path + " has " + std::string(type_name(rv.type)));
        }
        for (const std::string_view name : attribute_names(rv.attributes, v.attributes)) {
            const std::string n(name);
            const Attribute *ra = rv.find(n), *fa = v.find(n);
            if (auto e = kEncodingAttributes.find(n); agg && e != kEncodingAttributes.end()) {
                if (fa) found.encodings.push_back({&rv.name, &*e, value_text(fa)});
                else if (ra) found.encodings.push_back({&rv.name, &*e, "(none)"});
                continue;
            }
            if (same_attribute(ra, fa)) continue;
            if (n == "calendar" && same_calendar(text(ra), text(fa))) continue;  // aliases, CF-1.13 4.4.3
            if (agg && n == "units" && ra && fa) {
                try {
                    units_converter(text(fa), text(v.find("calendar")), text(ra), text(rv.find("calendar")));
                    warnings.push_back(F.path + ": " + rv.name + ":units = " + value_text(fa) + ", " + R.path + " has " +
                                       value_text(ra) + " (converted on read)");
                    continue;
                } catch (const std::exception& e) {
                    problems.push_back(F.path + ": " + rv.name + ":units: " + e.what());
                    continue;
                }
            }
            problems.push_back(F.path + ": attribute " + rv.name + ":" + n + " = " + value_text(fa) + " but " + R.path + " has " +
                         value_text(ra));
        }
    }
    for (const auto& v : F.vars)
        if (std::none_of(R.vars.begin(), R.vars.end(), [&](const VarInfo& x) { return x.name == v.name; }))
            problems.push_back(F.path + ": has a variable " + v.name + " that " + R.path + " lacks");
    for (const auto& ra : R.globals) {
        auto it = std::find_if(F.globals.begin(), F.globals.end(), [&](const Attribute& x) { return x.name == ra.name; });
        if (it == F.globals.end() || !same_attribute(&ra, &*it)) found.differing_globals.push_back(&ra.name);
    }
}

// The output's names for the variables that share one list of dimensions:
// their fragment map, uris and fragment dimensions.
struct Signature {
    std::vector<std::string> dims;
    std::string map_name, uris_name, map_j, map_i, strlen_dim;
    std::vector<std::string> fdims;
    std::vector<std::vector<uint64_t>> rows;
    std::vector<size_t> fragment_files;  // per fragment, C order over the fragment dims: index into file_uris
};

// The current directory; empty when it cannot be known (then each relative
// input path is made absolute on its own, and fails as it did).
std::string current_directory() {
    std::error_code ec;
    std::string cwd = std::filesystem::current_path(ec).string();
    return ec ? std::string() : cwd;
}

// What the steps of write_cf_aggregation share: the inputs as read, the
// placement of their fragments, then the output's names.
struct WriterState {
    const AggregateWriterOptions& opt;
    std::string out_path;
    std::string cwd = current_directory();  // once: relative inputs need no getcwd(2) each
    AggregateSummary summary;
    Problems problems;
    // read_inputs
    std::vector<FileInfo> files;
    std::vector<std::string> agg_dims;
    std::map<std::string, std::vector<uint8_t>> ref_values;  // plain variables of the reference file
    std::shared_ptr<const Dataset> reference;
    std::vector<std::string> coord_units, coord_calendar;  // per aggregated dim, the reference file's
    std::map<std::tuple<size_t, std::string, std::string>, Affine> converters;
    std::set<std::string> aggregated_vars;  // names of variables spanning an aggregated dim
    Encodings encodings;
    std::map<std::string, size_t> global_differences;
    // report_metadata_differences
    std::map<std::string, bool> unpack;  // aggregated variable -> presented unpacked
    // place_fragments
    std::vector<std::vector<uint64_t>> block_len;  // per dim, per fragment index
    std::vector<uint64_t> nf;                      // fragments per aggregated dim
    std::vector<int64_t> grid;                     // C order over nf: index into files
    // plan_names (taken grows while writing too)
    std::set<std::string> taken;
    std::map<std::string, uint64_t> agg_total;
    std::vector<Signature> sigs;
    std::map<std::vector<std::string>, size_t> sig_of;
    std::map<std::string, std::string> fragment_dim;  // dim -> its fragment dim name
    std::map<uint64_t, std::string> map_j_dims, map_i_dims;
    // One URI per file (made by read_inputs), shared by every signature: at
    // 1,000,000 files a copy per signature costs 100s of MiB.
    std::vector<std::string> file_uris;

    void throw_if_problems() const {
        if (!problems.empty()) throw AggregateInputError(problems.text());
    }
    bool is_agg_dim(const std::string& d) const { return std::find(agg_dims.begin(), agg_dims.end(), d) != agg_dims.end(); }
};

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

// One file's length along an aggregated dimension and its coordinate values, as read.
struct DimRead {
    bool missing = false;  // the file has no such dimension
    uint64_t length = 0;
    bool has_coordinate = false;
    std::string error;           // why the coordinate could not be read
    std::vector<double> values;  // in the file's own units
    std::string units, calendar;
};

DimRead read_aggregated_dim(const Dataset& ds, const std::string& dim) {
    DimRead r;
    auto id = ds.find_dimension(dim);
    if (!id) {
        r.missing = true;
        return r;
    }
    r.length = ds.dimensions[*id].length;
    const Variable* c = ds.find_variable(dim);
    if (!(c && c->source && c->dimids.size() == 1 && c->dimids[0] == *id && c->type != NcType::Char)) return r;
    r.has_coordinate = true;
    try {
        auto raw = read_all(*c->source);
        r.values.reserve(r.length);
        for (uint64_t k = 0; k < r.length; ++k) r.values.push_back(element_as_double(c->type, raw.data(), k));
        r.units = text(c->find_attribute("units")), r.calendar = text(c->find_attribute("calendar"));
    } catch (const std::exception& e) {
        r.error = e.what();
        r.values.clear();
    }
    return r;
}

// File fi's length along each aggregated dim and its coordinate values, in the reference's units.
void place_coordinates(WriterState& st, size_t fi, std::vector<DimRead>& dims) {
    FileInfo& F = st.files[fi];
    F.agg_len.reserve(dims.size());
    F.coords.reserve(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
        DimRead& r = dims[d];
        if (r.missing) {
            st.problems.add(F.path + ": has no dimension " + st.agg_dims[d]);
            F.agg_len.push_back(0);
            F.coords.emplace_back();
            continue;
        }
        F.agg_len.push_back(r.length);
        std::vector<double> values = std::move(r.values);
        auto unusable = [&](const std::string& why) {
            st.problems.add(F.path + ": coordinate " + st.agg_dims[d] + ": " + why);
            values.clear();
        };
        if (r.has_coordinate && !r.error.empty()) {
            unusable(r.error);
        } else if (r.has_coordinate) {
            try {
                if (fi == 0) st.coord_units[d] = r.units, st.coord_calendar[d] = r.calendar;
                auto key = std::make_tuple(d, r.units, r.calendar);
                auto it = st.converters.find(key);
                if (it == st.converters.end())
                    it = st.converters
                             .emplace(key, units_converter(r.units, r.calendar.empty() ? st.coord_calendar[d] : r.calendar,
                                                           st.coord_units[d], st.coord_calendar[d]))
                             .first;
                for (double& x : values) x = it->second.scale * x + it->second.offset;
            } catch (const std::exception& e) {
                unusable(e.what());
            }
        }
        F.coords.push_back(std::move(values));
    }
}

std::vector<DimRead> read_aggregated_dims(const WriterState& st, const Dataset& ds) {
    std::vector<DimRead> dims;
    dims.reserve(st.agg_dims.size());
    for (const auto& d : st.agg_dims) dims.push_back(read_aggregated_dim(ds, d));
    return dims;
}

// The reference's plain (non-aggregated) variables: their values, which the others must equal.
void keep_plain_values(WriterState& st, const Dataset& ds) {
    for (const auto& v : ds.variables)
        if (!st.aggregated_vars.count(v.name) && v.source) st.ref_values[v.name] = read_all(*v.source);
}

// Plain variables of another file compared with the reference's values.
void compare_plain_values(const WriterState& st, const std::string& path, const Dataset& ds, Findings& found) {
    for (const auto& v : ds.variables) {
        if (st.aggregated_vars.count(v.name) || !v.source) continue;
        auto it = st.ref_values.find(v.name);
        if (it == st.ref_values.end() || v.source->element_count() > kCompareLimit) continue;
        const VarInfo* rv = nullptr;
        for (const auto& x : st.files[0].vars)
            if (x.name == v.name) rv = &x;
        if (!rv || rv->type != v.type) continue;  // reported with the metadata
        try {
            if (read_all(*v.source) != it->second)
                found.problems.push_back(path + ": values of the non-aggregated variable " + v.name + " differ from " +
                                         st.files[0].path);
        } catch (const std::exception& e) {
            found.problems.push_back(e.what());
        }
    }
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

UsageError output_is_input(const WriterState& st) {
    return UsageError("the output " + st.opt.output + " is also an input");
}

void report_progress(const WriterState& st, size_t fi) {
    if (st.opt.progress) st.opt.progress(fi + 1, st.files.size());
}

// File 0, the reference: its header, coordinates and plain values, kept.
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
    keep_plain_values(st, *ds);
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
    compare_plain_values(st, F.path, *ds, r.found);
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

// Step 1: headers, coordinates, small plain variables; file 0 is the
// reference, the others are read by a few threads and merged in order.
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

// Step 2: metadata that differs from the reference (compared as each file was
// read), and per-file encodings (kerchunk #212/#586: the silent-wrong-data trap), said loudly.
void report_metadata_differences(WriterState& st) {
    std::vector<std::string>& warnings = st.summary.warnings;
    for (const auto& [name, n] : st.global_differences)
        warnings.push_back("global attribute " + name + " differs in " + std::to_string(n) + " file(s); kept from " +
                           st.files[0].path);
    for (const auto& [var, attrs] : st.encodings) {
        bool packed = attrs.count("scale_factor") || attrs.count("add_offset");
        for (const auto& [attr, per_file] : attrs) {
            if (per_file.by_value.size() <= 1 && per_file.files == st.files.size()) continue;
            std::string line = var + ":" + attr + " differs between files:";
            for (const auto& [val, first_and_count] : per_file.by_value) {
                const auto& [first, count] = first_and_count;
                line += " " + val + " in " + first + (count > 1 ? " and " + std::to_string(count - 1) + " more" : "") + ";";
            }
            line += " each fragment is decoded with its own";
            warnings.push_back(line);
        }
        if (packed) {
            st.unpack[var] = true;
            warnings.push_back(var + ": fragments are packed (scale_factor/add_offset); the aggregation variable is the "
                                     "unpacked data (CF-1.13 canonical form), without scale_factor/add_offset");
        }
    }
}

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

// Each file's block along aggregated dim d: files whose first coordinate value is equal share one.
void place_along(WriterState& st, size_t d) {
    auto& files = st.files;
    const auto& agg_dims = st.agg_dims;
    const bool have_coords = std::all_of(files.begin(), files.end(),
                                         [&](const FileInfo& F) { return !F.coords[d].empty() || F.agg_len[d] == 0; });
    if (!have_coords && agg_dims.size() > 1) {
        st.problems.add("dimension " + agg_dims[d] + ": some files have no coordinate variable " + agg_dims[d] +
                        "; cannot place fragments along several dimensions");
        return;
    }
    bool decreasing = false;
    const std::vector<size_t> order = order_by_coordinate(st, d, have_coords, decreasing);
    size_t block = 0;
    const FileInfo* prev = nullptr;
    for (size_t k = 0; k < order.size(); ++k) {
        FileInfo& F = files[order[k]];
        if (F.position.size() < agg_dims.size()) F.position.resize(agg_dims.size());
        bool same_block = prev && have_coords && close(F.coords[d][0], prev->coords[d][0]);
        if (!same_block) {
            if (prev) {
                ++block;
                if (have_coords) {
                    double last = prev->coords[d].back(), first = F.coords[d].front();
                    if (decreasing ? !(first < last) : !(first > last))
                        st.problems.add(F.path + ": " + agg_dims[d] + " values start at " + std::to_string(first) +
                                        ", overlapping or not after " + prev->path + " (ends at " +
                                        std::to_string(last) + ")");
                }
            }
            st.block_len[d].push_back(F.agg_len[d]);
            prev = &F;
        } else if (F.agg_len[d] != prev->agg_len[d] || F.coords[d] != prev->coords[d]) {
            bool equal = F.agg_len[d] == prev->agg_len[d];
            for (size_t j = 0; equal && j < F.coords[d].size(); ++j) equal = close(F.coords[d][j], prev->coords[d][j]);
            if (!equal)
                st.problems.add(F.path + ": " + agg_dims[d] + " values differ from " + prev->path +
                                ", which starts at the same value");
        }
        F.position[d] = block;
    }
    if (std::find(st.block_len[d].begin(), st.block_len[d].end(), 0) != st.block_len[d].end())
        st.problems.add("dimension " + agg_dims[d] + " has length 0 in some file");
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
        if (st.grid[c] < 0) {
            std::string idx;
            uint64_t rest = c;
            std::vector<uint64_t> ix(nf.size());
            for (size_t d = nf.size(); d-- > 0;) ix[d] = rest % nf[d], rest /= nf[d];
            for (size_t d = 0; d < nf.size(); ++d)
                idx += (d ? ", " : "") + st.agg_dims[d] + " block " + std::to_string(ix[d]);
            st.problems.add("no file covers " + idx + " (the files do not tile a hyperrectangle)");
        }
}

// Step 3: order the fragments along each aggregated dimension by coordinate values, then tile.
void place_fragments(WriterState& st) {
    st.block_len.assign(st.agg_dims.size(), {});
    for (size_t d = 0; d < st.agg_dims.size(); ++d) place_along(st, d);
    st.throw_if_problems();
    for (const auto& b : st.block_len) st.nf.push_back(b.size());
    fill_grid(st);
    st.throw_if_problems();
    st.summary.fragments_per_dim = st.nf;
}

// Length of dimension d in the output: the sum of the blocks if aggregated.
uint64_t dim_len(const WriterState& st, const std::string& d) {
    if (st.agg_total.count(d)) return st.agg_total.at(d);
    for (const auto& x : st.files[0].dims)
        if (x.name == d) return x.length;
    return 0;
}

// The widest URI of the picked files (char variables' string length).
size_t uri_width(const WriterState& st, const std::vector<size_t>& picks) {
    size_t w = 1;
    for (size_t f : picks) w = std::max(w, st.file_uris[f].size());
    return w;
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
    // Fragments of this variable: C order over its dims; dims it lacks at block 0.
    uint64_t n = 1;
    for (const auto& r : s.rows) n *= r.size();
    s.fragment_files.reserve(n);
    std::vector<uint64_t> ix(v.dims.size());
    for (uint64_t c = 0; c < n; ++c) {
        uint64_t rest = c;
        for (size_t k = v.dims.size(); k-- > 0;) ix[k] = rest % s.rows[k].size(), rest /= s.rows[k].size();
        uint64_t at = 0;
        for (size_t d = 0; d < st.agg_dims.size(); ++d) {
            auto vi = std::find(v.dims.begin(), v.dims.end(), st.agg_dims[d]);
            at = at * st.nf[d] + (vi == v.dims.end() ? 0 : ix[static_cast<size_t>(vi - v.dims.begin())]);
        }
        s.fragment_files.push_back(static_cast<size_t>(st.grid[at]));
    }
    if (st.opt.classic) s.strlen_dim = unique_name("strlen_" + s.uris_name, st.taken);
    return s;
}

// Step 4: the output's names, one signature per list of dimensions of the aggregated variables.
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

// A string variable to fill after nc_enddef: element i is (*values)[(*picks)[i]].
struct Strings {
    int varid;
    const std::vector<std::string>* values;
    const std::vector<size_t>* picks;  // null: values in order
    std::vector<std::string> one;      // the values when values is null
    size_t width;                      // 0: NC_STRING; else a char variable of this string length
};

// One open output file in define mode, and what is written after nc_enddef.
struct NcOutput {
    WriterState& st;
    netcdf::NetcdfWriter& file;
    nc_type map_type = NC_INT;
    std::map<std::string, int> dimid;
    std::vector<std::pair<int, const std::vector<uint8_t>*>> plain_data;
    std::vector<Strings> strings;
    std::vector<std::pair<int, std::vector<long long>>> maps;

    void def_dim(const std::string& name, uint64_t len, bool unlimited) {
        dimid[name] = file.def_dim(name, len, unlimited);
    }
    // owner empty: global attributes.
    void put_attributes(int varid, const std::vector<Attribute>& attrs, const std::string& owner) {
        for (const auto& a : attrs) {
            const std::string what = "attribute " + (owner.empty() ? a.name : owner + ":" + a.name);
            if (a.type == NcType::Char && a.name == "calendar" && !owner.empty()) {
                const std::string name = canonical_calendar(text(&a));  // fragments may spell it differently
                file.put_att_text(varid, "calendar", name, what);
            } else if (a.type == NcType::Char)
                file.put_att_text(varid, a.name, stored_text(a), what);
            else
                file.put_att(varid, a.name, static_cast<int>(a.type), a.length(), a.values.data(), what);
        }
    }
};

// The reference's dimensions, then the fragment, map and string-length dimensions.
void define_dimensions(NcOutput& out) {
    const WriterState& st = out.st;
    bool have_unlimited = false;
    for (const auto& d : st.files[0].dims) {
        // The record dimension stays one, aggregated or not (its length
        // in this file may be 0: readers take it from the fragment sizes).
        bool unlimited = d.unlimited && !(st.opt.classic && have_unlimited);
        have_unlimited |= unlimited;
        out.def_dim(d.name, dim_len(st, d.name), unlimited);
    }
    for (const auto& [d, f] : st.fragment_dim) {
        auto ai = std::find(st.agg_dims.begin(), st.agg_dims.end(), d);
        out.def_dim(f, ai == st.agg_dims.end() ? 1 : st.nf[static_cast<size_t>(ai - st.agg_dims.begin())], false);
    }
    for (const auto& [n, name] : st.map_j_dims) out.def_dim(name, n, false);
    for (const auto& [n, name] : st.map_i_dims) out.def_dim(name, n, false);
    for (auto& s : st.sigs)
        if (st.opt.classic) out.def_dim(s.strlen_dim, uri_width(st, s.fragment_files), false);
}

// The reference's global attributes; Conventions becomes CF-1.13 plus the fragments' non-CF words.
void put_global_attributes(NcOutput& out) {
    const std::vector<Attribute>& globals = out.st.files[0].globals;
    std::vector<Attribute> kept;
    for (const auto& a : globals)
        if (a.name != "Conventions") kept.push_back(a);
    out.put_attributes(NC_GLOBAL, kept, "");
    std::string conv;
    for (const auto& a : globals)
        if (a.name == "Conventions") {
            std::istringstream in(text(&a));
            std::string w;
            while (in >> w)
                if (w.rfind("CF-", 0) != 0 && w.rfind("CFA", 0) != 0) conv += " " + w;
        }
    conv = "CF-1.13" + conv;
    out.file.put_att_text(NC_GLOBAL, "Conventions", conv, "Conventions");
    // The fragments' own Conventions, which the presented dataset shows.
    for (const auto& a : globals)
        if (a.name == "Conventions" && a.type == NcType::Char && text(&a) != conv)
            out.file.put_att_text(NC_GLOBAL, kFragmentConventions, stored_text(a), kFragmentConventions);
}

// A non-aggregated variable: defined as in the reference, its values written after nc_enddef.
void define_plain_variable(NcOutput& out, const VarInfo& v) {
    std::vector<int> ids;
    for (const auto& d : v.dims) ids.push_back(out.dimid.at(d));
    const int varid = out.file.def_var(v.name, static_cast<int>(v.type), ids);
    out.put_attributes(varid, v.attributes, v.name);
    out.plain_data.emplace_back(varid, &out.st.ref_values.at(v.name));
    ++out.st.summary.plain_variables;
}

// The aggregation variable's attributes (from the lead fragment) and type: packed
// fragments give the unpacked type, without encoding attributes, with a default _FillValue.
std::vector<Attribute> aggregation_attributes(const WriterState& st, const VarInfo& v, const VarInfo& lead,
                                              NcType& type) {
    type = v.type;
    if (!st.unpack.count(v.name)) return lead.attributes;
    const Attribute* sf = v.find("scale_factor");
    const Attribute* ao = v.find("add_offset");
    type = sf ? sf->type : (ao ? ao->type : NcType::Float);
    if (type != NcType::Double) type = NcType::Float;
    std::vector<Attribute> attrs;
    for (const auto& a : lead.attributes)
        if (!kEncodingAttributes.count(a.name)) attrs.push_back(a);
    std::vector<uint8_t> fill(type_size(type));
    auto d = default_fill_big_endian(type);
    std::memcpy(fill.data(), d.data(), fill.size());
    swap_from_big_endian(type, fill.data(), 1);
    attrs.push_back(Attribute{"_FillValue", type, fill});
    return attrs;
}

// An aggregated variable: a scalar with aggregated_dimensions/aggregated_data, and its identifiers.
void define_aggregation_variable(NcOutput& out, const VarInfo& v, const std::vector<VarInfo>& lead_vars) {
    WriterState& st = out.st;
    // Attributes (units above all) of the first fragment in aggregation
    // order: the aggregation then reads like its ncrcat concatenation.
    const VarInfo& lead = [&]() -> const VarInfo& {
        for (const auto& x : lead_vars)
            if (x.name == v.name) return x;
        return v;
    }();
    NcType type = v.type;
    std::vector<Attribute> attrs = aggregation_attributes(st, v, lead, type);
    const Signature& s = st.sigs[st.sig_of.at(v.dims)];
    std::string dims_text;
    for (const auto& d : v.dims) dims_text += (dims_text.empty() ? "" : " ") + d;
    std::string ident = unique_name("fragment_identifiers_" + v.name, st.taken);
    attrs.push_back(Attribute::text("aggregated_dimensions", dims_text));
    attrs.push_back(
        Attribute::text("aggregated_data", "map: " + s.map_name + " uris: " + s.uris_name + " identifiers: " + ident));
    const int varid = out.file.def_var(v.name, static_cast<int>(type), {});
    out.put_attributes(varid, attrs, v.name);
    ++st.summary.aggregation_variables;
    // Its identifiers: one name for every fragment, so a scalar.
    if (st.opt.classic) {
        std::string sd = unique_name("strlen_" + ident, st.taken);
        out.def_dim(sd, std::max<size_t>(1, v.name.size()), false);
        const int iid = out.file.def_var(ident, NC_CHAR, {out.dimid.at(sd)});
        out.strings.push_back({iid, nullptr, nullptr, {v.name}, std::max<size_t>(1, v.name.size())});
    } else {
        const int iid = out.file.def_var(ident, NC_STRING, {});
        out.strings.push_back({iid, nullptr, nullptr, {v.name}, 0});
    }
}

// A signature's fragment map (rows of block lengths, padded with fill) and its uris.
void define_fragment_variables(NcOutput& out, const Signature& s) {
    const WriterState& st = out.st;
    const int mid = out.file.def_var(s.map_name, out.map_type, {out.dimid.at(s.map_j), out.dimid.at(s.map_i)});
    uint64_t width = 0;
    for (const auto& [n, name] : st.map_i_dims)
        if (name == s.map_i) width = n;
    std::vector<long long> m(s.rows.size() * width, out.map_type == NC_INT ? NC_FILL_INT : NC_FILL_INT64);
    for (size_t r = 0; r < s.rows.size(); ++r)
        for (size_t c = 0; c < s.rows[r].size(); ++c) m[r * width + c] = static_cast<long long>(s.rows[r][c]);
    out.maps.emplace_back(mid, std::move(m));
    std::vector<int> fids;
    for (const auto& f : s.fdims) fids.push_back(out.dimid.at(f));
    if (st.opt.classic) {
        fids.push_back(out.dimid.at(s.strlen_dim));
        const int uid = out.file.def_var(s.uris_name, NC_CHAR, fids);
        out.strings.push_back({uid, &st.file_uris, &s.fragment_files, {}, uri_width(st, s.fragment_files)});
    } else {
        const int uid = out.file.def_var(s.uris_name, NC_STRING, fids);
        out.strings.push_back({uid, &st.file_uris, &s.fragment_files, {}, 0});
    }
}

// After nc_enddef: plain values, fragment maps, then the string variables.
void write_values(NcOutput& out) {
    for (const auto& [varid, bytes] : out.plain_data)
        if (!bytes->empty()) out.file.put_var(varid, bytes->data(), "variable data");
    for (const auto& [varid, m] : out.maps) out.file.put_var_longlong(varid, m.data(), "fragment map");
    for (const auto& s : out.strings) {
        const std::vector<std::string>& values = s.values ? *s.values : s.one;
        const size_t count = s.picks ? s.picks->size() : values.size();
        auto element = [&](size_t i) -> const std::string& { return values[s.picks ? (*s.picks)[i] : i]; };
        if (s.width == 0) {
            std::vector<const char*> p;
            for (size_t i = 0; i < count; ++i) p.push_back(element(i).c_str());
            out.file.put_var_string(s.varid, p.data(), "string variable");
        } else {
            std::string buf(count * s.width, '\0');
            for (size_t i = 0; i < count; ++i) std::memcpy(buf.data() + i * s.width, element(i).data(), element(i).size());
            out.file.put_var_text(s.varid, buf.data(), "char variable");
        }
    }
}

// The output's format: CDF-5 when a type or a map value needs it in classic mode; 64-bit maps past INT_MAX.
netcdf::NetcdfWriter::Format output_format(const WriterState& st, nc_type& map_type) {
    bool cdf5 = false;
    for (const auto& v : st.files[0].vars) {
        if (is_cdf5_only(v.type)) cdf5 = true;
        for (const auto& a : v.attributes)
            if (is_cdf5_only(a.type)) cdf5 = true;
    }
    bool big_map = false;
    for (const auto& s : st.sigs)
        for (const auto& r : s.rows)
            for (uint64_t x : r)
                if (x > static_cast<uint64_t>(INT_MAX)) big_map = true;
    if (big_map && st.opt.classic) cdf5 = true;
    map_type = big_map ? NC_INT64 : NC_INT;
    using Format = netcdf::NetcdfWriter::Format;
    return st.opt.classic ? (cdf5 ? Format::Cdf5 : Format::Classic64BitOffset) : Format::Netcdf4;
}

// Define and fill the output in the open file.
void write_definitions_and_values(NcOutput& out, const std::vector<VarInfo>& lead_vars) {
    const WriterState& st = out.st;
    define_dimensions(out);
    put_global_attributes(out);
    for (const auto& v : st.files[0].vars) {
        if (!st.aggregated_vars.count(v.name)) define_plain_variable(out, v);
        else define_aggregation_variable(out, v, lead_vars);
    }
    for (const auto& s : st.sigs) define_fragment_variables(out, s);
    out.file.enddef();
    write_values(out);
    out.file.close();
}

// Step 5: write (to a temporary name, renamed at the end: nothing on error).
void write_output(WriterState& st) {
    // The first fragment in aggregation order lends its attributes (its own metadata was released when read).
    const FileInfo& lead_file = st.files[static_cast<size_t>(st.grid[0])];
    const std::vector<VarInfo> lead_vars = st.grid[0] == 0 ? st.files[0].vars : var_infos(*open_metadata(lead_file.path));
    // Written in a private folder beside OUT, held by descriptor, so no planted
    // link can redirect it; renamed into place at the end (the folder goes
    // with its destructor).
    const PrivateFolder folder(st.out_path);
    const std::string name = fs::path(st.out_path).filename().string();
    const std::string tmp = folder.path_of(name);
    nc_type map_type = NC_INT;
    const auto format = output_format(st, map_type);
    {
        netcdf::NetcdfWriter file(tmp, st.opt.output, format);  // closed, unkept, on an error
        NcOutput out{st, file, map_type};
        write_definitions_and_values(out, lead_vars);
    }
    folder.publish(name);
}

}  // namespace

AggregateSummary write_cf_aggregation(const std::vector<std::string>& files_in, const AggregateWriterOptions& opt) {
    if (files_in.empty()) throw UsageError("no input files");
    if (opt.output.empty()) throw UsageError("no output file (-o OUT.nc)");
    WriterState st{opt, lexically_normal_absolute(opt.output)};
    st.summary.files = files_in.size();
    read_inputs(st, files_in);
    report_metadata_differences(st);
    place_fragments(st);
    plan_names(st);
    write_output(st);
    return st.summary;
}

}  // namespace ncafs::agg
