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
#include <mutex>
#include <set>
#include <sstream>

#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/read/path_policy.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "codecs/array_source.hpp"
#include "codecs/dataset.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "codecs/open_dataset.hpp"

namespace ncafs::agg {

namespace fs = std::filesystem;

std::string uri_path_encode(const std::string& path) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : path) {
        if (std::isalnum(c) || std::strchr("-._~!$&'()*+,;=:@/", c)) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

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

void check(int status, const std::string& path, const std::string& what) {
    if (status != NC_NOERR) throw SourceError(path, what + ": " + nc_strerror(status));
}

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

std::shared_ptr<const Dataset> open_metadata(const std::string& path) {
    return std::make_shared<const Dataset>(open_dataset(path));
}

void release_metadata(FileInfo& F) {
    std::vector<Dimension>().swap(F.dims);
    std::vector<Attribute>().swap(F.globals);
    std::vector<VarInfo>().swap(F.vars);
}

// Differences of F's dimensions, variables and attributes from the
// reference file R: problems, warnings (units converted on read), per-file
// encodings and counts of differing global attributes.
void compare_with_reference(const FileInfo& R, const FileInfo& F, const Reference& ref, Problems& problems,
                            std::vector<std::string>& warnings, Encodings& encodings,
                            std::map<std::string, size_t>& global_differences) {
    const auto& aggregated_vars = ref.aggregated_vars;
    auto is_agg_dim = [&](const std::string& d) {
        return std::find(ref.agg_dims.begin(), ref.agg_dims.end(), d) != ref.agg_dims.end();
    };
    for (const auto& rd : R.dims) {
        auto it = std::find_if(F.dims.begin(), F.dims.end(), [&](const Dimension& x) { return x.name == rd.name; });
        if (it == F.dims.end()) problems.add(F.path + ": has no dimension " + rd.name + " (" + R.path + " has)");
        else if (!is_agg_dim(rd.name) && it->length != rd.length)
            problems.add(F.path + ": dimension " + rd.name + " has length " + std::to_string(it->length) + ", " + R.path +
                         " has " + std::to_string(rd.length));
    }
    for (const auto& fd : F.dims)
        if (std::none_of(R.dims.begin(), R.dims.end(), [&](const Dimension& x) { return x.name == fd.name; }))
            problems.add(F.path + ": has a dimension " + fd.name + " that " + R.path + " lacks");
    std::map<std::string, const VarInfo*> fv;
    for (const auto& v : F.vars) fv[v.name] = &v;
    for (const auto& rv : R.vars) {
        auto it = fv.find(rv.name);
        if (it == fv.end()) {
            problems.add(F.path + ": has no variable " + rv.name);
            continue;
        }
        const VarInfo& v = *it->second;
        const bool agg = aggregated_vars.count(rv.name) > 0;
        if (v.dims != rv.dims) problems.add(F.path + ": variable " + rv.name + " has other dimensions than in " + R.path);
        if (v.type != rv.type) {
            if (agg && v.type != NcType::Char && rv.type != NcType::Char)  // CF-1.13: any numeric type
                warnings.push_back(F.path + ": variable " + rv.name + " is " + std::string(type_name(v.type)) + ", " +
                                   R.path + " has " + std::string(type_name(rv.type)) + " (converted on read)");
            else
                problems.add(F.path + ": variable " + rv.name + " has type " + std::string(type_name(v.type)) + ", " +
                             R.path + " has " + std::string(type_name(rv.type)));
        }
        std::set<std::string> names;
        for (const auto& a : rv.attributes) names.insert(a.name);
        for (const auto& a : v.attributes) names.insert(a.name);
        for (const auto& n : names) {
            const Attribute *ra = rv.find(n), *fa = v.find(n);
            if (agg && kEncodingAttributes.count(n)) {
                if (fa) encodings[rv.name][n].add(F.path, value_text(fa));
                else if (ra) encodings[rv.name][n].add(F.path, "(none)");
                continue;
            }
            if (same_attribute(ra, fa)) continue;
            if (agg && n == "units" && ra && fa) {
                try {
                    units_converter(text(fa), text(v.find("calendar")), text(ra), text(rv.find("calendar")));
                    warnings.push_back(F.path + ": " + rv.name + ":units = " + value_text(fa) + ", " + R.path + " has " +
                                       value_text(ra) + " (converted on read)");
                    continue;
                } catch (const std::exception& e) {
                    problems.add(F.path + ": " + rv.name + ":units: " + e.what());
                    continue;
                }
            }
            problems.add(F.path + ": attribute " + rv.name + ":" + n + " = " + value_text(fa) + " but " + R.path + " has " +
                         value_text(ra));
        }
    }
    for (const auto& v : F.vars)
        if (std::none_of(R.vars.begin(), R.vars.end(), [&](const VarInfo& x) { return x.name == v.name; }))
            problems.add(F.path + ": has a variable " + v.name + " that " + R.path + " lacks");
    for (const auto& ra : R.globals) {
        auto it = std::find_if(F.globals.begin(), F.globals.end(), [&](const Attribute& x) { return x.name == ra.name; });
        if (it == F.globals.end() || !same_attribute(&ra, &*it)) ++global_differences[ra.name];
    }
}

}  // namespace

AggregateSummary write_cf_aggregation(const std::vector<std::string>& files_in, const AggregateWriterOptions& opt) {
    if (files_in.empty()) throw UsageError("no input files");
    if (opt.output.empty()) throw UsageError("no output file (-o OUT.nc)");
    AggregateSummary summary;
    summary.files = files_in.size();
    Problems problems;
    std::vector<std::string>& warnings = summary.warnings;
    const std::string out_path = lexically_normal_absolute(opt.output);

    // 1. Headers, coordinates, small plain variables; file 0 is the reference.
    std::vector<FileInfo> files(files_in.size());
    std::vector<std::string> agg_dims = opt.dims;
    std::map<std::string, std::vector<uint8_t>> ref_values;  // plain variables of the reference file
    std::shared_ptr<const Dataset> reference;
    std::vector<std::string> coord_units(agg_dims.size()), coord_calendar(agg_dims.size());
    std::map<std::tuple<size_t, std::string, std::string>, Affine> converters;
    std::set<std::string> aggregated_vars;  // names of variables spanning an aggregated dim
    Encodings encodings;
    std::map<std::string, size_t> global_differences;
    for (size_t fi = 0; fi < files_in.size(); ++fi) {
        FileInfo& F = files[fi];
        F.path = lexically_normal_absolute(files_in[fi]);
        if (F.path == out_path) throw UsageError("the output " + opt.output + " is also an input");
        std::shared_ptr<const Dataset> ds;
        try {
            ds = std::make_shared<const Dataset>(open_dataset(F.path));
        } catch (const std::exception& e) {
            problems.add(e.what());
            continue;
        }
        F.dims = ds->dimensions;
        F.globals = ds->attributes;
        F.vars = var_infos(*ds);
        if (fi == 0) {
            reference = ds;
            if (agg_dims.empty()) {
                auto u = ds->unlimited_dimension();
                if (!u) throw UsageError(F.path + ": has no unlimited dimension: name the aggregated dimension(s) with --dim");
                agg_dims.push_back(ds->dimensions[*u].name);
                coord_units.resize(1), coord_calendar.resize(1);
            }
            for (const auto& v : F.vars)
                for (const auto& d : v.dims)
                    if (std::find(agg_dims.begin(), agg_dims.end(), d) != agg_dims.end()) aggregated_vars.insert(v.name);
            for (const auto& v : F.vars)
                if (aggregated_vars.count(v.name))
                    for (const auto& a : v.attributes)
                        if (kEncodingAttributes.count(a.name)) encodings[v.name][a.name].add(F.path, value_text(&a));
        }
        for (size_t d = 0; d < agg_dims.size(); ++d) {
            auto id = ds->find_dimension(agg_dims[d]);
            if (!id) {
                problems.add(F.path + ": has no dimension " + agg_dims[d]);
                F.agg_len.push_back(0);
                F.coords.emplace_back();
                continue;
            }
            F.agg_len.push_back(ds->dimensions[*id].length);
            const Variable* c = ds->find_variable(agg_dims[d]);
            std::vector<double> values;
            if (c && c->source && c->dimids.size() == 1 && c->dimids[0] == *id && c->type != NcType::Char) {
                try {
                    auto raw = read_all(*c->source);
                    for (uint64_t k = 0; k < F.agg_len.back(); ++k) values.push_back(element_as_double(c->type, raw.data(), k));
                    std::string u = text(c->find_attribute("units")), cal = text(c->find_attribute("calendar"));
                    if (fi == 0) coord_units[d] = u, coord_calendar[d] = cal;
                    auto key = std::make_tuple(d, u, cal);
                    auto it = converters.find(key);
                    if (it == converters.end())
                        it = converters.emplace(key, units_converter(u, cal.empty() ? coord_calendar[d] : cal, coord_units[d],
                                                                     coord_calendar[d])).first;
                    for (double& x : values) x = it->second.scale * x + it->second.offset;
                } catch (const std::exception& e) {
                    problems.add(F.path + ": coordinate " + agg_dims[d] + ": " + e.what());
                    values.clear();
                }
            }
            F.coords.push_back(std::move(values));
        }
        // Plain (non-aggregated) variables: keep the reference's values, compare the others'.
        for (const auto& v : ds->variables) {
            if (aggregated_vars.count(v.name) || !v.source) continue;
            if (fi == 0) {
                ref_values[v.name] = read_all(*v.source);
                continue;
            }
            auto it = ref_values.find(v.name);
            if (it == ref_values.end() || v.source->element_count() > kCompareLimit) continue;
            const VarInfo* rv = nullptr;
            for (const auto& x : files[0].vars)
                if (x.name == v.name) rv = &x;
            if (!rv || rv->type != v.type) continue;  // reported with the metadata
            try {
                if (read_all(*v.source) != it->second)
                    problems.add(F.path + ": values of the non-aggregated variable " + v.name + " differ from " + files[0].path);
            } catch (const std::exception& e) {
                problems.add(e.what());
            }
        }
        if (fi > 0 && reference) {
            compare_with_reference(files[0], F, Reference{agg_dims, aggregated_vars}, problems, warnings, encodings,
                                   global_differences);
            release_metadata(F);  // linear memory: 1,000,000 files keep only paths, lengths and coordinates
        }
        if (opt.progress) opt.progress(fi + 1, files_in.size());
    }
    if (!problems.empty()) throw AggregateInputError(problems.text());
    for (const auto& [name, values] : ref_values)
        if (values.size() / std::max<size_t>(1, type_size(reference->find_variable(name)->type)) > kCompareLimit)
            warnings.push_back("non-aggregated variable " + name + " is too big to compare; copied from " + files[0].path);

    // 2. Metadata agreement with the reference file (compared as each file is read).
    const FileInfo& R = files[0];
    for (const auto& [name, n] : global_differences)
        warnings.push_back("global attribute " + name + " differs in " + std::to_string(n) + " file(s); kept from " + R.path);

    // Per-file encodings (kerchunk #212/#586: the silent-wrong-data trap), said loudly.
    std::map<std::string, bool> unpack;  // aggregated variable -> presented unpacked
    for (const auto& [var, attrs] : encodings) {
        bool packed = attrs.count("scale_factor") || attrs.count("add_offset");
        for (const auto& [attr, per_file] : attrs) {
            if (per_file.by_value.size() <= 1 && per_file.files == files.size()) continue;
            std::string line = var + ":" + attr + " differs between files:";
            for (const auto& [val, first_and_count] : per_file.by_value) {
                const auto& [first, count] = first_and_count;
                line += " " + val + " in " + first + (count > 1 ? " and " + std::to_string(count - 1) + " more" : "") + ";";
            }
            line += " each fragment is decoded with its own";
            warnings.push_back(line);
        }
        if (packed) {
            unpack[var] = true;
            warnings.push_back(var + ": fragments are packed (scale_factor/add_offset); the aggregation variable is the "
                                     "unpacked data (CF-1.13 canonical form), without scale_factor/add_offset");
        }
    }

    // 3. Order the fragments along each aggregated dimension by coordinate values.
    std::vector<std::vector<uint64_t>> block_len(agg_dims.size());  // per dim, per fragment index
    for (size_t d = 0; d < agg_dims.size(); ++d) {
        const bool have_coords = std::all_of(files.begin(), files.end(), [&](const FileInfo& F) { return !F.coords[d].empty() || F.agg_len[d] == 0; });
        if (!have_coords && agg_dims.size() > 1) {
            problems.add("dimension " + agg_dims[d] + ": some files have no coordinate variable " + agg_dims[d] +
                         "; cannot place fragments along several dimensions");
            continue;
        }
        std::vector<size_t> order(files.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        bool decreasing = false;
        if (have_coords) {
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
        }
        // Distinct blocks along d: files whose first coordinate value is equal share one.
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
                            problems.add(F.path + ": " + agg_dims[d] + " values start at " + std::to_string(first) +
                                         ", overlapping or not after " + prev->path + " (ends at " + std::to_string(last) + ")");
                    }
                }
                block_len[d].push_back(F.agg_len[d]);
                prev = &F;
            } else {
                if (F.agg_len[d] != prev->agg_len[d] || F.coords[d] != prev->coords[d]) {
                    bool equal = F.agg_len[d] == prev->agg_len[d];
                    for (size_t j = 0; equal && j < F.coords[d].size(); ++j) equal = close(F.coords[d][j], prev->coords[d][j]);
                    if (!equal)
                        problems.add(F.path + ": " + agg_dims[d] + " values differ from " + prev->path +
                                     ", which starts at the same value");
                }
            }
            F.position[d] = block;
        }
        if (std::find(block_len[d].begin(), block_len[d].end(), 0) != block_len[d].end())
            problems.add("dimension " + agg_dims[d] + " has length 0 in some file");
    }
    if (!problems.empty()) throw AggregateInputError(problems.text());
    std::vector<uint64_t> nf;
    for (const auto& b : block_len) nf.push_back(b.size());
    uint64_t cells = 1;
    for (uint64_t n : nf) cells *= n;
    std::vector<int64_t> grid(cells, -1);
    for (size_t fi = 0; fi < files.size(); ++fi) {
        uint64_t at = 0;
        for (size_t d = 0; d < nf.size(); ++d) at = at * nf[d] + files[fi].position[d];
        if (grid[at] >= 0)
            problems.add(files[fi].path + ": covers the same place as " + files[static_cast<size_t>(grid[at])].path);
        else
            grid[at] = static_cast<int64_t>(fi);
    }
    for (uint64_t c = 0; c < cells; ++c)
        if (grid[c] < 0) {
            std::string idx;
            uint64_t rest = c;
            std::vector<uint64_t> ix(nf.size());
            for (size_t d = nf.size(); d-- > 0;) ix[d] = rest % nf[d], rest /= nf[d];
            for (size_t d = 0; d < nf.size(); ++d) idx += (d ? ", " : "") + agg_dims[d] + " block " + std::to_string(ix[d]);
            problems.add("no file covers " + idx + " (the files do not tile a hyperrectangle)");
        }
    if (!problems.empty()) throw AggregateInputError(problems.text());
    summary.fragments_per_dim = nf;

    // 4. The output's names.
    std::set<std::string> taken;
    for (const auto& d : R.dims) taken.insert(d.name);
    for (const auto& v : R.vars) taken.insert(v.name);
    std::map<std::string, uint64_t> agg_total;
    for (size_t d = 0; d < agg_dims.size(); ++d) {
        uint64_t t = 0;
        for (uint64_t l : block_len[d]) t += l;
        agg_total[agg_dims[d]] = t;
    }
    struct Signature {
        std::vector<std::string> dims;
        std::string map_name, uris_name, map_j, map_i, strlen_dim;
        std::vector<std::string> fdims;
        std::vector<std::vector<uint64_t>> rows;
        std::vector<size_t> fragment_files;  // per fragment, C order over the fragment dims: index into file_uris
    };
    std::vector<Signature> sigs;
    std::map<std::vector<std::string>, size_t> sig_of;
    std::map<std::string, std::string> fragment_dim;  // dim -> its fragment dim name
    std::map<uint64_t, std::string> map_j_dims, map_i_dims;
    auto dim_len = [&](const std::string& d) -> uint64_t {
        if (agg_total.count(d)) return agg_total[d];
        for (const auto& x : R.dims)
            if (x.name == d) return x.length;
        return 0;
    };
    auto uri_of = [&](const std::string& file) {
        const std::string dir = fs::path(out_path).parent_path().string();
        if (!opt.absolute_uris) {
            fs::path rel = fs::path(file).lexically_relative(dir);
            if (!rel.empty()) {
                std::string r = uri_path_encode(rel.string());
                auto colon = r.find(':'), slash = r.find('/');
                if (colon != std::string::npos && (slash == std::string::npos || colon < slash)) r = "./" + r;
                return r;
            }
        }
        return "file://" + uri_path_encode(file);
    };
    // One URI per file, shared by every signature (at 1,000,000 files a copy per signature costs 100s of MiB).
    std::vector<std::string> file_uris;
    file_uris.reserve(files.size());
    for (const auto& F : files) file_uris.push_back(uri_of(F.path));
    auto uri_width = [&](const std::vector<size_t>& picks) {
        size_t w = 1;
        for (size_t f : picks) w = std::max(w, file_uris[f].size());
        return w;
    };
    for (const auto& v : R.vars) {
        if (!aggregated_vars.count(v.name) || sig_of.count(v.dims)) continue;
        Signature s;
        s.dims = v.dims;
        s.map_name = unique_name("fragment_map_" + v.name, taken);
        s.uris_name = unique_name("fragment_uris_" + v.name, taken);
        uint64_t widest = 1;
        for (const auto& d : v.dims) {
            auto ai = std::find(agg_dims.begin(), agg_dims.end(), d);
            if (ai != agg_dims.end()) s.rows.push_back(block_len[static_cast<size_t>(ai - agg_dims.begin())]);
            else s.rows.push_back({dim_len(d)});
            widest = std::max<uint64_t>(widest, s.rows.back().size());
            if (!fragment_dim.count(d)) fragment_dim[d] = unique_name("f_" + d, taken);
            s.fdims.push_back(fragment_dim[d]);
        }
        const uint64_t nrows = v.dims.size();
        if (!map_j_dims.count(nrows)) map_j_dims[nrows] = unique_name("a_map_j" + std::to_string(nrows), taken);
        if (!map_i_dims.count(widest)) map_i_dims[widest] = unique_name("a_map_i" + std::to_string(widest), taken);
        s.map_j = map_j_dims[nrows];
        s.map_i = map_i_dims[widest];
        // Fragments of this variable: C order over its dims; dims it lacks at block 0.
        uint64_t n = 1;
        for (const auto& r : s.rows) n *= r.size();
        s.fragment_files.reserve(n);
        std::vector<uint64_t> ix(v.dims.size());
        for (uint64_t c = 0; c < n; ++c) {
            uint64_t rest = c;
            for (size_t k = v.dims.size(); k-- > 0;) ix[k] = rest % s.rows[k].size(), rest /= s.rows[k].size();
            uint64_t at = 0;
            for (size_t d = 0; d < agg_dims.size(); ++d) {
                auto vi = std::find(v.dims.begin(), v.dims.end(), agg_dims[d]);
                at = at * nf[d] + (vi == v.dims.end() ? 0 : ix[static_cast<size_t>(vi - v.dims.begin())]);
            }
            s.fragment_files.push_back(static_cast<size_t>(grid[at]));
        }
        if (opt.classic) s.strlen_dim = unique_name("strlen_" + s.uris_name, taken);
        sig_of[v.dims] = sigs.size();
        sigs.push_back(std::move(s));
    }

    // 5. Write (to a temporary name, renamed at the end: nothing on error).
    // The first fragment in aggregation order lends its attributes (its own metadata was released when read).
    const FileInfo& lead_file = files[static_cast<size_t>(grid[0])];
    const std::vector<VarInfo> lead_vars = grid[0] == 0 ? R.vars : var_infos(*open_metadata(lead_file.path));
    const std::string tmp = out_path + ".tmp" + std::to_string(::getpid());
    bool cdf5 = false;
    for (const auto& v : R.vars) {
        if (is_cdf5_only(v.type)) cdf5 = true;
        for (const auto& a : v.attributes)
            if (is_cdf5_only(a.type)) cdf5 = true;
    }
    bool big_map = false;
    for (const auto& s : sigs)
        for (const auto& r : s.rows)
            for (uint64_t x : r)
                if (x > static_cast<uint64_t>(INT_MAX)) big_map = true;
    if (big_map && opt.classic) cdf5 = true;
    const int mode = NC_CLOBBER | (opt.classic ? (cdf5 ? NC_64BIT_DATA : NC_64BIT_OFFSET) : NC_NETCDF4);
    const nc_type map_type = big_map ? NC_INT64 : NC_INT;
    {
        std::lock_guard lock(netcdf_library_mutex());
        int ncid = -1;
        check(nc_create(tmp.c_str(), mode, &ncid), opt.output, "cannot create");
        try {
            std::map<std::string, int> dimid;
            auto def_dim = [&](const std::string& name, uint64_t len, bool unlimited) {
                int id = -1;
                check(nc_def_dim(ncid, name.c_str(), unlimited ? NC_UNLIMITED : len, &id), opt.output, "dimension " + name);
                dimid[name] = id;
            };
            bool have_unlimited = false;
            for (const auto& d : R.dims) {
                // The record dimension stays one, aggregated or not (its length
                // in this file may be 0: readers take it from the fragment sizes).
                bool unlimited = d.unlimited && !(opt.classic && have_unlimited);
                have_unlimited |= unlimited;
                def_dim(d.name, dim_len(d.name), unlimited);
            }
            for (const auto& [d, f] : fragment_dim) {
                auto ai = std::find(agg_dims.begin(), agg_dims.end(), d);
                def_dim(f, ai == agg_dims.end() ? 1 : nf[static_cast<size_t>(ai - agg_dims.begin())], false);
            }
            for (const auto& [n, name] : map_j_dims) def_dim(name, n, false);
            for (const auto& [n, name] : map_i_dims) def_dim(name, n, false);
            for (auto& s : sigs)
                if (opt.classic) def_dim(s.strlen_dim, uri_width(s.fragment_files), false);
            for (const auto& a : R.globals) {
                if (a.name == "Conventions") continue;
                if (a.type == NcType::Char) check(nc_put_att_text(ncid, NC_GLOBAL, a.name.c_str(), a.values.size(), reinterpret_cast<const char*>(a.values.data())), opt.output, "attribute " + a.name);
                else check(nc_put_att(ncid, NC_GLOBAL, a.name.c_str(), static_cast<nc_type>(a.type), a.length(), a.values.data()), opt.output, "attribute " + a.name);
            }
            {
                std::string conv;
                for (const auto& w : [&] {
                         std::vector<std::string> out;
                         for (const auto& a : R.globals)
                             if (a.name == "Conventions") {
                                 std::istringstream in(text(&a));
                                 std::string t;
                                 while (in >> t) out.push_back(t);
                             }
                         return out;
                     }())
                    if (w.rfind("CF-", 0) != 0 && w.rfind("CFA", 0) != 0) conv += " " + w;
                conv = "CF-1.13" + conv;
                check(nc_put_att_text(ncid, NC_GLOBAL, "Conventions", conv.size(), conv.c_str()), opt.output, "Conventions");
                // The fragments' own Conventions, which the presented dataset shows.
                for (const auto& a : R.globals)
                    if (a.name == "Conventions" && a.type == NcType::Char && text(&a) != conv)
                        check(nc_put_att_text(ncid, NC_GLOBAL, kFragmentConventions, a.values.size(),
                                              reinterpret_cast<const char*>(a.values.data())),
                              opt.output, kFragmentConventions);
            }
            auto put_attributes = [&](int varid, const std::vector<Attribute>& attrs, const std::string& owner) {
                for (const auto& a : attrs) {
                    if (a.type == NcType::Char)
                        check(nc_put_att_text(ncid, varid, a.name.c_str(), a.values.size(), reinterpret_cast<const char*>(a.values.data())), opt.output, "attribute " + owner + ":" + a.name);
                    else
                        check(nc_put_att(ncid, varid, a.name.c_str(), static_cast<nc_type>(a.type), a.length(), a.values.data()), opt.output, "attribute " + owner + ":" + a.name);
                }
            };
            std::vector<std::pair<int, const std::vector<uint8_t>*>> plain_data;
            struct Strings {
                int varid;
                const std::vector<std::string>* values;
                const std::vector<size_t>* picks;  // element i is (*values)[(*picks)[i]]; null: values in order
                std::vector<std::string> one;
                size_t width;
            };
            std::vector<Strings> strings;
            for (const auto& v : R.vars) {
                int varid = -1;
                if (!aggregated_vars.count(v.name)) {
                    std::vector<int> ids;
                    for (const auto& d : v.dims) ids.push_back(dimid.at(d));
                    check(nc_def_var(ncid, v.name.c_str(), static_cast<nc_type>(v.type), static_cast<int>(ids.size()), ids.data(), &varid), opt.output, "variable " + v.name);
                    put_attributes(varid, v.attributes, v.name);
                    plain_data.emplace_back(varid, &ref_values.at(v.name));
                    ++summary.plain_variables;
                    continue;
                }
                const bool unpacked = unpack.count(v.name) > 0;
                NcType type = v.type;
                // Attributes (units above all) of the first fragment in aggregation
                // order: the aggregation then reads like its ncrcat concatenation.
                const VarInfo& lead = [&]() -> const VarInfo& {
                    for (const auto& x : lead_vars)
                        if (x.name == v.name) return x;
                    return v;
                }();
                std::vector<Attribute> attrs;
                if (unpacked) {
                    const Attribute* sf = v.find("scale_factor");
                    const Attribute* ao = v.find("add_offset");
                    type = sf ? sf->type : (ao ? ao->type : NcType::Float);
                    if (type != NcType::Double) type = NcType::Float;
                    for (const auto& a : lead.attributes)
                        if (!kEncodingAttributes.count(a.name)) attrs.push_back(a);
                    std::vector<uint8_t> fill(type_size(type));
                    auto d = default_fill_big_endian(type);
                    std::memcpy(fill.data(), d.data(), fill.size());
                    swap_from_big_endian(type, fill.data(), 1);
                    attrs.push_back(Attribute{"_FillValue", type, fill});
                } else {
                    attrs = lead.attributes;
                }
                const Signature& s = sigs[sig_of.at(v.dims)];
                std::string dims_text;
                for (const auto& d : v.dims) dims_text += (dims_text.empty() ? "" : " ") + d;
                std::string ident = unique_name("fragment_identifiers_" + v.name, taken);
                attrs.push_back(Attribute::text("aggregated_dimensions", dims_text));
                attrs.push_back(Attribute::text("aggregated_data", "map: " + s.map_name + " uris: " + s.uris_name + " identifiers: " + ident));
                check(nc_def_var(ncid, v.name.c_str(), static_cast<nc_type>(type), 0, nullptr, &varid), opt.output, "variable " + v.name);
                put_attributes(varid, attrs, v.name);
                ++summary.aggregation_variables;
                // Its identifiers: one name for every fragment, so a scalar.
                int iid = -1;
                if (opt.classic) {
                    std::string sd = unique_name("strlen_" + ident, taken);
                    def_dim(sd, std::max<size_t>(1, v.name.size()), false);
                    int d = dimid.at(sd);
                    check(nc_def_var(ncid, ident.c_str(), NC_CHAR, 1, &d, &iid), opt.output, "variable " + ident);
                    strings.push_back({iid, nullptr, nullptr, {v.name}, std::max<size_t>(1, v.name.size())});
                } else {
                    check(nc_def_var(ncid, ident.c_str(), NC_STRING, 0, nullptr, &iid), opt.output, "variable " + ident);
                    strings.push_back({iid, nullptr, nullptr, {v.name}, 0});
                }
            }
            std::vector<std::pair<int, std::vector<long long>>> maps;
            for (const auto& s : sigs) {
                int ids[2] = {dimid.at(s.map_j), dimid.at(s.map_i)};
                int mid = -1, uid = -1;
                check(nc_def_var(ncid, s.map_name.c_str(), map_type, 2, ids, &mid), opt.output, "variable " + s.map_name);
                const uint64_t width = [&] {
                    uint64_t w = 0;
                    for (const auto& [n, name] : map_i_dims)
                        if (name == s.map_i) w = n;
                    return w;
                }();
                std::vector<long long> m(s.rows.size() * width, map_type == NC_INT ? NC_FILL_INT : NC_FILL_INT64);
                for (size_t r = 0; r < s.rows.size(); ++r)
                    for (size_t c = 0; c < s.rows[r].size(); ++c) m[r * width + c] = static_cast<long long>(s.rows[r][c]);
                maps.emplace_back(mid, std::move(m));
                std::vector<int> fids;
                for (const auto& f : s.fdims) fids.push_back(dimid.at(f));
                if (opt.classic) {
                    fids.push_back(dimid.at(s.strlen_dim));
                    check(nc_def_var(ncid, s.uris_name.c_str(), NC_CHAR, static_cast<int>(fids.size()), fids.data(), &uid), opt.output, "variable " + s.uris_name);
                    strings.push_back({uid, &file_uris, &s.fragment_files, {}, uri_width(s.fragment_files)});
                } else {
                    check(nc_def_var(ncid, s.uris_name.c_str(), NC_STRING, static_cast<int>(fids.size()), fids.data(), &uid), opt.output, "variable " + s.uris_name);
                    strings.push_back({uid, &file_uris, &s.fragment_files, {}, 0});
                }
            }
            check(nc_enddef(ncid), opt.output, "end of definitions");
            for (const auto& [varid, bytes] : plain_data)
                if (!bytes->empty()) check(nc_put_var(ncid, varid, bytes->data()), opt.output, "variable data");
            for (const auto& [varid, m] : maps) check(nc_put_var_longlong(ncid, varid, m.data()), opt.output, "fragment map");
            for (const auto& s : strings) {
                const std::vector<std::string>& values = s.values ? *s.values : s.one;
                const size_t count = s.picks ? s.picks->size() : values.size();
                auto element = [&](size_t i) -> const std::string& { return values[s.picks ? (*s.picks)[i] : i]; };
                if (s.width == 0) {
                    std::vector<const char*> p;
                    for (size_t i = 0; i < count; ++i) p.push_back(element(i).c_str());
                    check(nc_put_var_string(ncid, s.varid, p.data()), opt.output, "string variable");
                } else {
                    std::string buf(count * s.width, '\0');
                    for (size_t i = 0; i < count; ++i) std::memcpy(buf.data() + i * s.width, element(i).data(), element(i).size());
                    check(nc_put_var_text(ncid, s.varid, buf.data()), opt.output, "char variable");
                }
            }
            check(nc_close(ncid), opt.output, "close");
        } catch (...) {
            nc_close(ncid);
            ::unlink(tmp.c_str());
            throw;
        }
    }
    std::error_code ec;
    fs::rename(tmp, out_path, ec);
    if (ec) {
        ::unlink(tmp.c_str());
        throw SourceError(opt.output, "cannot rename the finished file into place: " + ec.message());
    }
    return summary;
}

}  // namespace ncafs::agg
