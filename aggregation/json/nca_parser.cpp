#include "aggregation/json/nca_parser.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "aggregation/model/error.hpp"
#include "aggregation/json/lenient_json.hpp"
#include "aggregation/json/streamed_json.hpp"
#include "codecs/checked_math.hpp"
#include "aggregation/terms/text_attribute.hpp"
#include "aggregation/model/units_conversion.hpp"

namespace ncafs::agg {

// NCA/CFA 0.1-0.4 aggregation variables (nca_array / cfa_array JSON), one
// component per function, in the order parse_nca_variable (at the end) runs
// them over an NcaParse they share:
//   master dimensions -> presented attributes -> JSON root -> partition matrix
//   -> each partition (index, sub-array, axes, part, reversal, units, location)
//   -> location conventions settled -> boxes placed and checked.

using nlohmann::json;

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::vector<std::string> split_blank(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// Everything a parse needs to say where it is.
struct Context {
    const std::string& file;
    std::string where;  // "tas:nca_array"
    [[noreturn]] void fail(const std::string& path, const std::string& reason) const {
        throw AggregationError(file, path.empty() ? where : where + " " + path, reason);
    }
};

const json* find_key(const json& obj, std::initializer_list<const char*> names) {
    for (const char* n : names) {
        auto it = obj.find(n);
        if (it != obj.end()) return &*it;
    }
    return nullptr;
}

std::string key_used(const json& obj, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (obj.contains(n)) return n;
    return *names.begin();
}

uint64_t as_index(const Context& cx, const json& v, const std::string& path) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) {
        if (v.get<int64_t>() < 0) cx.fail(path, "negative value " + v.dump());
        return static_cast<uint64_t>(v.get<int64_t>());
    }
    if (v.is_number_float()) {
        double d = v.get<double>();
        // 2^64 and beyond (and NaN) must not reach the cast: undefined behaviour.
        if (d >= 0 && d < 18446744073709551616.0 && d == std::floor(d)) return static_cast<uint64_t>(d);
    }
    cx.fail(path, "expected a non-negative integer, found " + v.dump());
}

std::vector<uint64_t> as_index_list(const Context& cx, const json& v, const std::string& path) {
    if (!v.is_array()) cx.fail(path, "expected a list of integers, found " + v.dump());
    std::vector<uint64_t> out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i].is_number_unsigned()) {  // the usual case: no message path built
            out.push_back(v[i].get<uint64_t>());
            continue;
        }
        out.push_back(as_index(cx, v[i], path + "[" + std::to_string(i) + "]"));
    }
    return out;
}

std::vector<std::string> as_name_list(const Context& cx, const json& v, const std::string& path) {
    if (!v.is_array()) cx.fail(path, "expected a list of dimension names, found " + v.dump());
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) cx.fail(path + "[" + std::to_string(i) + "]", "expected a name, found " + v[i].dump());
        out.push_back(v[i].get<std::string>());
    }
    return out;
}

// Optional string (null and absent are "not given").
std::optional<std::string> as_opt_string(const Context& cx, const json* v, const std::string& path) {
    if (!v || v->is_null()) return std::nullopt;
    if (!v->is_string()) cx.fail(path, "expected a string, found " + v->dump());
    return v->get<std::string>();
}

// Reads one element of an attribute as the master's type (fill values).
std::optional<std::vector<uint8_t>> attribute_element(const Variable& v, const char* name, NcType type) {
    const Attribute* a = v.find_attribute(name);
    if (!a || a->length() < 1 || a->type == NcType::Char) return std::nullopt;
    std::vector<uint8_t> out(type_size(type));
    convert_elements(a->type, a->values.data(), type, out.data(), 1);
    return out;
}

// Partition indices already seen: one bit per matrix cell while the matrix
// is small enough, else the indices themselves (a hostile pmshape).
class SeenCells {
public:
    bool insert(const std::vector<uint64_t>& index, const std::vector<uint64_t>& matrix_shape) {
        const uint64_t cells = element_count(matrix_shape);
        if (cells > kMaxBits) return set_.insert(index).second;
        if (bits_.size() != cells) bits_.assign(cells, false);
        uint64_t at = 0;
        for (size_t j = 0; j < index.size(); ++j) at = at * matrix_shape[j] + index[j];
        if (bits_[at]) return false;
        bits_[at] = true;
        return true;
    }

private:
    static constexpr uint64_t kMaxBits = uint64_t{1} << 27;  // 16 MiB of bits
    std::vector<bool> bits_;
    std::set<std::vector<uint64_t>> set_;
};

// "tas:nca_array Partitions[3]": where a partition's messages point.
std::string partition_where(const std::string& variable_where, size_t i) {
    return variable_where + " Partitions[" + std::to_string(i) + "]";
}

// Why a partition's index disagrees with pmshape (or repeats another's), if it does.
std::optional<std::string> index_problem(const std::vector<uint64_t>& index, const std::vector<uint64_t>& matrix_shape,
                                         SeenCells& seen) {
    if (index.size() != matrix_shape.size())
        return "has " + std::to_string(index.size()) + " entries but pmshape has " + std::to_string(matrix_shape.size());
    for (size_t j = 0; j < index.size(); ++j)
        if (index[j] >= matrix_shape[j])
            return "value " + std::to_string(index[j]) + " at " + std::to_string(j) + " outside pmshape " +
                   std::to_string(matrix_shape[j]);
    if (!seen.insert(index, matrix_shape)) return std::string("repeats the index of another partition");
    return std::nullopt;
}

bool directions_of(const Context& cx, const json& v, const std::string& path, std::map<std::string, bool>& out) {
    if (v.is_null()) return false;
    if (v.is_boolean()) return false;  // scalar master: an implied direction, no data effect
    if (!v.is_object()) cx.fail(path, "expected an object {dimension: true|false}, found " + v.dump());
    for (auto it = v.begin(); it != v.end(); ++it) {
        bool b;
        if (it->is_boolean()) b = it->get<bool>();
        else if (it->is_number_integer()) b = it->get<int64_t>() != 0;
        else cx.fail(path + "." + it.key(), "expected true or false, found " + it->dump());
        out[it.key()] = b;
    }
    return true;
}

// One group of a part: (start, stop, step) with an inclusive stop, or a list of indices.
template <typename Fail>
IndexSelection make_selection(const std::vector<int64_t>& values, bool is_range, const Fail& fail) {
    IndexSelection sel;
    if (is_range) {
        if (values.size() != 3) fail("a range needs (start, stop, step), found " + std::to_string(values.size()) + " numbers");
        int64_t a = values[0], b = values[1], s = values[2];
        if (s == 0) fail("range step 0");
        if (a < 0 || b < 0) fail("negative index in range");
        if ((b - a) != 0 && ((b - a) > 0) != (s > 0)) fail("range step runs away from its stop");
        sel.first = a;
        sel.step = s;
        sel.count = static_cast<uint64_t>((b - a) / s + 1);  // inclusive stop
    } else {
        sel.is_list = true;
        if (values.empty()) fail("empty index list");
        for (int64_t v : values) {
            if (v < 0) fail("negative index in list");
            sel.list.push_back(static_cast<uint64_t>(v));
        }
    }
    return sel;
}

}  // namespace

std::optional<NcaGeneration> nca_generation(const Variable& v) {
    if (v.find_attribute("nca_array")) return NcaGeneration::Nca;
    if (v.find_attribute("cfa_array")) return NcaGeneration::Cfa;
    return std::nullopt;
}

bool is_nca_private(const Variable& v) {
    std::string role = text_attribute(v, "cf_role");
    if (role == "nca_private" || role == "cfa_private") return true;
    for (const char* n : {"nca_private", "cfa_private"}) {
        const Attribute* a = v.find_attribute(n);
        if (a && a->type != NcType::Char && a->length() >= 1 && a->as_double(0) != 0) return true;
    }
    return false;
}

std::vector<IndexSelection> parse_part(const std::string& text, bool square_is_range) {
    size_t i = 0;
    auto fail = [&](const std::string& why) -> void {
        throw std::runtime_error("part \"" + text + "\" at character " + std::to_string(i) + ": " + why);
    };
    auto skip = [&] {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    };
    auto integer = [&]() -> int64_t {
        skip();
        size_t j = i;
        if (j < text.size() && (text[j] == '-' || text[j] == '+')) ++j;
        size_t digits = j;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        if (j == digits) fail("expected an integer");
        if (j - digits > 18) fail("integer too large");
        int64_t v = std::stoll(text.substr(i, j - i));
        i = j;
        return v;
    };
    std::vector<IndexSelection> out;
    skip();
    if (i >= text.size() || text[i] != '[') fail("expected '['");
    ++i;
    skip();
    if (i < text.size() && text[i] == ']') {
        ++i;
        skip();
        if (i != text.size()) fail("trailing characters");
        return out;  // "[]": whole sub-array
    }
    while (true) {
        skip();
        if (i >= text.size() || (text[i] != '[' && text[i] != '(')) fail("expected '[' or '('");
        const char open = text[i++];
        const char close = open == '[' ? ']' : ')';
        std::vector<int64_t> values;
        skip();
        while (i < text.size() && text[i] != close) {
            values.push_back(integer());
            skip();
            if (i < text.size() && text[i] == ',') ++i, skip();
            else if (i < text.size() && text[i] != close) fail("expected ',' or '" + std::string(1, close) + "'");
        }
        if (i >= text.size()) fail("unterminated group");
        ++i;
        out.push_back(make_selection(values, (open == '[') == square_is_range, fail));
        skip();
        if (i < text.size() && text[i] == ',') {
            ++i;
            continue;
        }
        if (i < text.size() && text[i] == ']') {
            ++i;
            break;
        }
        fail("expected ',' or ']'");
    }
    skip();
    if (i != text.size()) fail("trailing characters");
    return out;
}

namespace {

// Which convention a partition's location uses (A1, docs/conventions/nca-json.md).
enum class Convention { Unknown, Inclusive, HalfOpen };

// What the steps of parse_nca_variable share.
struct NcaParse {
    const Dataset& file;
    const Variable& carrier;
    const PathPolicy& paths;
    const AggregationLimits& limits;
    NcaGeneration gen;
    std::string prefix;     // "nca_" or "cfa_"
    std::string json_attr;  // prefix + "array"
    Context cx;
    Aggregate agg;
    json root;  // the JSON without the Partitions list (streamed, partition by partition)
    StreamedList parts;
    // What the partitions are read with: the JSON outside Partitions.
    struct PartitionContext {
        bool square_is_range = false;  // part grammar: [a,b,s] is a range (0.4) rather than a list
        std::map<std::string, bool> master_directions;
        std::vector<std::string> matrix_dims;
        std::vector<uint64_t> matrix_shape;
        bool base_given = false;
        std::string base;
        bool operator==(const PartitionContext&) const = default;
    } ctx;
    bool saw_partition_directions = false;  // a partition has pdirections/directions (0.3 part grammar)
    uint64_t matrix_cells = 0;
    // Per partition, in order (flat: a million partitions must not cost a million vectors).
    std::vector<Convention> convention;
    std::vector<uint64_t> raw_locations;  // [start, stop] per master dim
    SeenCells seen_index;
    std::vector<uint64_t> indices;  // matrix_dims.size() per partition
    std::vector<bool> has_index;    // false: none or ignored
    // Partition 0 is read before anyone knows whether it is alone.
    bool first_lacks_index = false, first_lacks_location = false;
    size_t first_no_index_warning_at = 0;
    std::exception_ptr partition_error;  // the first partition that failed (reported after the JSON-wide checks)
    bool context_ok = false;  // ctx holds for the partitions being streamed

    size_t rank() const { return agg.dims.size(); }
    std::pair<uint64_t, uint64_t> raw_location(size_t i, size_t d) const {
        return {raw_locations[2 * (i * rank() + d)], raw_locations[2 * (i * rank() + d) + 1]};
    }
    int master_dim(const std::string& n) const {
        for (size_t d = 0; d < agg.dims.size(); ++d)
            if (agg.dims[d] == n) return static_cast<int>(d);
        return -1;
    }
};

// Master dimensions from nca_dimensions (missing or blank: scalar master).
void parse_master_dimensions(NcaParse& st) {
    Aggregate& agg = st.agg;
    const std::string dims_attr = st.prefix + "dimensions";
    agg.dims = split_blank(text_attribute(st.carrier, dims_attr.c_str()));
    for (size_t d = 0; d < agg.dims.size(); ++d) {
        auto id = st.file.find_dimension(agg.dims[d]);
        if (!id)
            throw AggregationError(agg.file, st.carrier.name + ":" + dims_attr,
                                   "unknown dimension '" + agg.dims[d] + "' (not a dimension of the file)");
        for (size_t e = 0; e < d; ++e)
            if (agg.dims[e] == agg.dims[d])
                throw AggregationError(agg.file, st.carrier.name + ":" + dims_attr,
                                       "dimension '" + agg.dims[d] + "' repeated");
        agg.shape.push_back(st.file.dimensions[*id].length);
    }
}

// Presented attributes: the carrier's, minus the machinery (5.2); units, fill and packing.
void parse_presented_attributes(NcaParse& st) {
    Aggregate& agg = st.agg;
    const Variable& carrier = st.carrier;
    for (const auto& a : carrier.attributes) {
        if (a.name.rfind("nca_", 0) == 0 || a.name.rfind("cfa_", 0) == 0) continue;
        if (a.name == "cf_role") {
            std::string role = lower(text_attribute(carrier, "cf_role"));
            if (role.rfind("nca", 0) == 0 || role.rfind("cfa", 0) == 0) continue;
        }
        agg.attributes.push_back(a);
    }
    agg.units = text_attribute(carrier, "units");
    agg.calendar = text_attribute(carrier, "calendar");
    if (auto f = attribute_element(carrier, "_FillValue", agg.type)) agg.fill = *f;
    else if (auto m = attribute_element(carrier, "missing_value", agg.type)) agg.fill = *m;
    else {
        auto be = default_fill_big_endian(agg.type);
        agg.fill.assign(be.begin(), be.end());
        swap_from_big_endian(agg.type, agg.fill.data(), 1);
    }
    const Attribute* sf = carrier.find_attribute("scale_factor");
    const Attribute* ao = carrier.find_attribute("add_offset");
    if ((sf && sf->type != NcType::Char && sf->length() > 0) || (ao && ao->type != NcType::Char && ao->length() > 0))
        agg.packing = Affine{sf && sf->length() > 0 ? sf->as_double(0) : 1.0, ao && ao->length() > 0 ? ao->as_double(0) : 0.0};
}

// The JSON outside Partitions: an object; unknown keys; the part grammar.
void check_json_root(NcaParse& st) {
    const Context& cx = st.cx;
    const json& root = st.root;
    if (!root.is_object()) cx.fail("", "expected a JSON object, found " + std::string(root.type_name()));

    static const std::set<std::string> known_top = {"directions", "pmshape", "pmdimensions", "pshape", "pdimensions",
                                                    "base", "Partitions"};
    for (auto it = root.begin(); it != root.end(); ++it)
        if (!known_top.count(it.key())) st.agg.warnings.push_back(cx.where + " " + it.key() + ": unknown key ignored");
}

// The part grammar depends on the generation (1.9): nca_array => 0.2 rules;
// cfa_array => 0.4 rules unless the 0.3-only keys directions/pdirections appear.
bool square_is_range(const NcaParse& st) {
    return st.gen == NcaGeneration::Cfa && !st.root.contains("directions") && !st.saw_partition_directions;
}

// Master directions, the partition matrix (0.1 spells it pshape/pdimensions at top level, A3), base.
NcaParse::PartitionContext parse_matrix(const NcaParse& st) {
    const Context& cx = st.cx;
    const json& root = st.root;
    NcaParse::PartitionContext c;
    c.square_is_range = square_is_range(st);
    const std::string dims_attr = st.prefix + "dimensions";
    if (const json* dir = find_key(root, {"directions"})) directions_of(cx, *dir, "directions", c.master_directions);
    for (const auto& [name, _] : c.master_directions)
        if (st.master_dim(name) < 0)
            cx.fail("directions." + name, "unknown dimension name '" + name + "' (not in " + dims_attr + ")");
    if (const json* pd = find_key(root, {"pmdimensions", "pdimensions"})) {
        std::string key = key_used(root, {"pmdimensions", "pdimensions"});
        c.matrix_dims = as_name_list(cx, *pd, key);
        for (size_t j = 0; j < c.matrix_dims.size(); ++j)
            if (st.master_dim(c.matrix_dims[j]) < 0)
                cx.fail(key + "[" + std::to_string(j) + "]", "unknown dimension name '" + c.matrix_dims[j] + "'");
    }
    if (const json* ps = find_key(root, {"pmshape", "pshape"})) {
        std::string key = key_used(root, {"pmshape", "pshape"});
        c.matrix_shape = as_index_list(cx, *ps, key);
        if (c.matrix_shape.size() != c.matrix_dims.size())
            cx.fail(key, "has " + std::to_string(c.matrix_shape.size()) + " entries but pmdimensions has " +
                             std::to_string(c.matrix_dims.size()));
    } else {
        c.matrix_shape.assign(c.matrix_dims.size(), 1);  // 0.4: all ones for the given pmdimensions
    }
    if (const json* b = find_key(root, {"base"}); b && !b->is_null()) {
        if (!b->is_string()) cx.fail("base", "expected a string, found " + b->dump());
        c.base_given = true;
        c.base = b->get<std::string>();
    }
    return c;
}

// The Partitions list: present, a list, within max_fragments; compared with pmshape.
void check_partitions(NcaParse& st) {
    const Context& cx = st.cx;
    const json* parts = find_key(st.root, {"Partitions"});
    const uint64_t n = st.parts.count;
    if (st.parts.seen && n > st.limits.max_fragments)
        cx.fail("Partitions", std::to_string(n) + " partitions exceed the limit max_fragments=" +
                                  std::to_string(st.limits.max_fragments));
    if (!parts || parts->is_null()) cx.fail("Partitions", "missing");
    if (!parts->is_array()) cx.fail("Partitions", "expected a list, found " + parts->dump());
    if (st.parts.repeated) cx.fail("Partitions", "given twice");
    st.matrix_cells = element_count(st.ctx.matrix_shape);  // saturates: pmshape is hostile
    // Locations place partitions; pmshape and index only validate (a
    // disagreement is a warning, overlap is refused by the partition grid).
    if (n > st.matrix_cells)
        st.agg.warnings.push_back(cx.where + " Partitions: " + std::to_string(n) + " partitions but pmshape has room for " +
                                  std::to_string(st.matrix_cells) + " (locations place them)");
}

// A partition's index (validation only: location places the partition).
void parse_partition_index(NcaParse& st, size_t i, const std::string& P, const json& pj, const Fragment& f) {
    st.has_index.push_back(false);
    st.indices.resize(st.indices.size() + st.ctx.matrix_dims.size());
    if (const json* ix = find_key(pj, {"index"}); ix && !ix->is_null()) {
        const std::vector<uint64_t> index = as_index_list(st.cx, *ix, P + ".index");
        if (auto problem = index_problem(index, st.ctx.matrix_shape, st.seen_index)) {
            st.agg.warnings.push_back(f.where + ".index: " + *problem + " (ignored: location places the partition)");
            return;
        }
        st.has_index[i] = true;
        std::copy(index.begin(), index.end(), st.indices.end() - static_cast<ptrdiff_t>(index.size()));
    } else if (i > 0) {
        st.agg.warnings.push_back(f.where + ": no index (location alone places it)");
    } else {  // warned about once a second partition shows up
        st.first_lacks_index = true;
        st.first_no_index_warning_at = st.agg.warnings.size();
    }
}

// The sub-array object: format, file, variable, declared shape and type. Returns the object.
const json& parse_subarray(NcaParse& st, const std::string& P, const json& pj, Fragment& f, std::string& S) {
    static const std::set<std::string> known_sub = {"file", "ncvar", "varid", "shape", "pshape", "dtype", "pdtype",
                                                    "format", "file_offset", "lbpack", "scale_factor", "add_offset",
                                                    "endian", "_FillValue"};
    const Context& cx = st.cx;
    const json* sub = find_key(pj, {"subarray", "data", "sub_array"});
    S = P + "." + key_used(pj, {"subarray", "data", "sub_array"});
    if (!sub || !sub->is_object()) cx.fail(S, "missing sub-array object (subarray/data/sub_array)");
    for (auto it = sub->begin(); it != sub->end(); ++it)
        if (!known_sub.count(it.key())) st.agg.warnings.push_back(cx.where + " " + S + "." + it.key() + ": unknown key ignored");

    std::optional<std::string> format = as_opt_string(cx, find_key(pj, {"format"}), P + ".format");
    std::string format_path = P + ".format";
    if (auto sf = as_opt_string(cx, find_key(*sub, {"format"}), S + ".format")) format = sf, format_path = S + ".format";
    if (format) {
        std::string fl = lower(*format);
        // The reader is chosen by the file's magic number (codecs/open_dataset);
        // `format` only rules out what no reader here understands (PP, UM...).
        if (fl != "netcdf" && fl != "nc" && fl != "netcdf3" && fl != "netcdf4" && fl != "cdf" && fl != "hdf5" &&
            fl != "ds" && fl != "vds")
            cx.fail(format_path,
                    "unsupported format \"" + *format + "\" (only netCDF, ds and vds sub-arrays can be read)");
    }

    auto file_name = as_opt_string(cx, find_key(*sub, {"file"}), S + ".file");
    if (!file_name || file_name->empty()) {
        f.kind = FragmentKind::Self;  // 1.8: file missing or "" => the aggregation file itself
        f.path = st.paths.aggregation_file();
    } else {
        try {
            f.path = st.paths.resolve(*file_name, st.ctx.base_given, st.ctx.base);
        } catch (const std::exception& e) {
            cx.fail(S + ".file", e.what());
        }
    }
    if (auto nv = as_opt_string(cx, find_key(*sub, {"ncvar"}), S + ".ncvar")) f.variable = *nv;
    if (const json* vid = find_key(*sub, {"varid"}); vid && !vid->is_null()) {
        if (!vid->is_number_integer()) cx.fail(S + ".varid", "expected an integer, found " + vid->dump());
        f.varid = vid->get<int64_t>();  // 0.4: ignored when ncvar is set
    }
    if (f.variable.empty() && !f.varid) cx.fail(S, "names no variable (ncvar or varid)");
    if (f.kind == FragmentKind::Self && !f.variable.empty() && !st.file.find_variable(f.variable))
        cx.fail(S + ".ncvar", "no variable '" + f.variable + "' in the aggregation file");
    if (const json* sh = find_key(*sub, {"shape", "pshape"}); sh && !sh->is_null())
        f.declared_shape = as_index_list(cx, *sh, S + "." + key_used(*sub, {"shape", "pshape"}));
    if (auto dt = as_opt_string(cx, find_key(*sub, {"dtype", "pdtype"}), S + ".dtype")) {
        f.declared_type = type_from_name(lower(*dt));
        if (!f.declared_type) st.agg.warnings.push_back(cx.where + " " + S + ".dtype: unknown type \"" + *dt + "\" ignored");
    }
    return *sub;
}

// Partition axes: pdimensions (names of aggregation-file dimensions) or the master's; checked against shape.
std::vector<std::string> parse_partition_axes(NcaParse& st, const std::string& P, const json& pj, const json& sub,
                                              const std::string& S, Fragment& f) {
    const Context& cx = st.cx;
    std::vector<std::string> axis_names;
    if (const json* pdims = find_key(pj, {"pdimensions", "dimensions"}); pdims && !pdims->is_null()) {
        std::string key = P + "." + key_used(pj, {"pdimensions", "dimensions"});
        axis_names = as_name_list(cx, *pdims, key);
        for (size_t k = 0; k < axis_names.size(); ++k) {
            int d = st.master_dim(axis_names[k]);
            if (d < 0 && !st.file.find_dimension(axis_names[k]))
                cx.fail(key + "[" + std::to_string(k) + "]", "unknown dimension name '" + axis_names[k] + "'");
            for (size_t e = 0; e < k; ++e)
                if (axis_names[e] == axis_names[k])
                    cx.fail(key + "[" + std::to_string(k) + "]", "dimension '" + axis_names[k] + "' repeated");
            f.axis_to_master.push_back(d);
        }
    } else {
        axis_names = st.agg.dims;
        for (size_t d = 0; d < st.rank(); ++d) f.axis_to_master.push_back(static_cast<int>(d));
    }
    const size_t K = axis_names.size();
    if (!f.declared_shape.empty() || (find_key(sub, {"shape", "pshape"}) && K == 0)) {
        if (f.declared_shape.size() != K)
            cx.fail(S + "." + key_used(sub, {"shape", "pshape"}),
                    "has " + std::to_string(f.declared_shape.size()) + " entries but the partition has " +
                        std::to_string(K) + " dimensions");
    }
    return axis_names;
}

// part: one selection per partition axis (sub-array order).
void parse_partition_part(const NcaParse& st, const std::string& P, const json& pj, size_t K, Fragment& f) {
    const Context& cx = st.cx;
    auto pt = as_opt_string(cx, find_key(pj, {"part"}), P + ".part");
    if (!pt) return;
    std::vector<IndexSelection> sels;
    try {
        sels = parse_part(*pt, st.ctx.square_is_range);
    } catch (const std::exception& e) {
        cx.fail(P + ".part", e.what());
    }
    if (sels.empty()) return;
    if (sels.size() != K)
        cx.fail(P + ".part", "has " + std::to_string(sels.size()) + " selections but the partition has " +
                                 std::to_string(K) + " dimensions");
    for (size_t k = 0; k < K; ++k) {
        if (!f.declared_shape.empty() && sels[k].max_index() >= f.declared_shape[k])
            cx.fail(P + ".part", "selection " + std::to_string(k) + " reaches index " +
                                     std::to_string(sels[k].max_index()) + " of a sub-array axis of length " +
                                     std::to_string(f.declared_shape[k]));
        f.part.push_back(std::move(sels[k]));
    }
}

// Shape of the partition's data array per master dim (0 = unknown): the expected box counts.
std::vector<uint64_t> expected_counts(const NcaParse& st, const std::string& P, const Fragment& f,
                                      const std::vector<std::string>& axis_names) {
    const size_t rank = st.rank();
    std::vector<uint64_t> expected(rank, 0);
    std::vector<bool> mapped(rank, false);
    for (size_t k = 0; k < axis_names.size(); ++k) {
        uint64_t n = !f.part.empty() && f.part[k] ? f.part[k]->size() : !f.declared_shape.empty() ? f.declared_shape[k] : 0;
        int d = f.axis_to_master[k];
        if (d < 0) {
            if (n != 0 && n != 1)
                st.cx.fail(P + ".dimensions[" + std::to_string(k) + "]",
                           "dimension '" + axis_names[k] + "' is not a master dimension, so it must have size 1, not " +
                               std::to_string(n));
            continue;
        }
        mapped[d] = true;
        expected[d] = n;
    }
    for (size_t d = 0; d < rank; ++d)
        if (!mapped[d]) expected[d] = 1;  // a master dim the partition lacks spans one index
    return expected;
}

// Reversal: pdirections vs master directions (0.2/0.3), reverse/flip lists (0.4).
void parse_partition_reversal(NcaParse& st, const std::string& P, const json& pj,
                              const std::vector<std::string>& axis_names, Fragment& f) {
    const Context& cx = st.cx;
    std::map<std::string, bool> pdirs;
    if (const json* pd = find_key(pj, {"pdirections", "directions"}))
        directions_of(cx, *pd, P + "." + key_used(pj, {"pdirections", "directions"}), pdirs);
    for (const auto& [name, dir] : pdirs) {
        auto it = std::find(axis_names.begin(), axis_names.end(), name);
        if (it == axis_names.end())
            cx.fail(P + "." + key_used(pj, {"pdirections", "directions"}) + "." + name,
                    "unknown dimension name '" + name + "' (not a dimension of the partition)");
        int d = f.axis_to_master[static_cast<size_t>(it - axis_names.begin())];
        if (d < 0) continue;  // size-1 axis: direction is harmless
        // Unspecified master direction: increasing (the usual sense).
        bool m = st.ctx.master_directions.count(name) ? st.ctx.master_directions.at(name) : true;
        f.reverse[static_cast<size_t>(d)] = dir != m;
    }
    if (const json* rv = find_key(pj, {"reverse", "flip"}); rv && !rv->is_null()) {
        std::string key = P + "." + key_used(pj, {"reverse", "flip"});
        auto names = as_name_list(cx, *rv, key);
        for (size_t j = 0; j < names.size(); ++j) {
            auto it = std::find(axis_names.begin(), axis_names.end(), names[j]);
            if (it == axis_names.end())
                cx.fail(key + "[" + std::to_string(j) + "]",
                        "unknown dimension name '" + names[j] + "' (not a dimension of the partition)");
            int d = f.axis_to_master[static_cast<size_t>(it - axis_names.begin())];
            if (d >= 0) f.reverse[static_cast<size_t>(d)] = true;
        }
    }
}

// Units and calendar (missing => the master's).
void parse_partition_units(const NcaParse& st, const std::string& P, const json& pj, Fragment& f) {
    const Context& cx = st.cx;
    const Aggregate& agg = st.agg;
    auto pu = as_opt_string(cx, find_key(pj, {"units", "punits"}), P + "." + key_used(pj, {"units", "punits"}));
    auto pc = as_opt_string(cx, find_key(pj, {"calendar", "pcalendar"}), P + "." + key_used(pj, {"calendar", "pcalendar"}));
    if (!pu && !pc) return;
    const std::string from = pu.value_or(agg.units), cal = pc.value_or(agg.calendar);
    try {
        f.units = units_converter(from, cal, agg.units, agg.calendar);
    } catch (const std::exception& e) {
        cx.fail(P + "." + key_used(pj, {"units", "punits"}), e.what());
    }
    if (!f.units.is_identity()) f.units_text = from + " -> " + agg.units;
}

// Location: raw pairs, and the convention they read as when the data's extent is known.
void parse_partition_location(NcaParse& st, size_t i, const std::string& P, const json& pj,
                              const std::vector<uint64_t>& expected) {
    const Context& cx = st.cx;
    const size_t rank = st.rank();
    auto& raw = st.raw_locations;
    const json* loc = find_key(pj, {"location"});
    if (!loc || loc->is_null()) {
        if (i > 0) cx.fail(P + ".location", "missing (only a single partition may omit it)");
        st.first_lacks_location = true;  // refused later should a second partition show up
        for (size_t d = 0; d < rank; ++d) raw.push_back(0), raw.push_back(st.agg.shape[d]);
        st.convention[i] = Convention::HalfOpen;  // 0.4: one partition covering the whole master
        return;
    }
    if (!loc->is_array()) cx.fail(P + ".location", "expected a list of [start, stop] pairs, found " + loc->dump());
    if (loc->size() != rank)
        cx.fail(P + ".location", "has " + std::to_string(loc->size()) + " ranges but the master has " +
                                     std::to_string(rank) + " dimensions");
    for (size_t d = 0; d < rank; ++d) {
        const std::string L = P + ".location[" + std::to_string(d) + "]";
        auto pair = as_index_list(cx, (*loc)[d], L);
        if (pair.size() != 2) cx.fail(L, "expected [start, stop], found " + (*loc)[d].dump());
        if (pair[1] < pair[0]) cx.fail(L, "stop " + std::to_string(pair[1]) + " before start " + std::to_string(pair[0]));
        raw.push_back(pair[0]), raw.push_back(pair[1]);
    }
    // A1 rule: per dimension, the extent of the partition's
    // data (after part, size-1 alignment and permutation) matches
    // exactly one of stop-start+1 (inclusive, the text and every real
    // writer) and stop-start (half-open, every CDL example).
    for (size_t d = 0; d < rank; ++d) {
        if (expected[d] == 0) continue;
        const auto [a, b] = st.raw_location(i, d);
        const std::string L = P + ".location[" + std::to_string(d) + "]";
        Convention c;
        if (b - a != UINT64_MAX && b - a + 1 == expected[d]) c = Convention::Inclusive;
        else if (b - a == expected[d]) c = Convention::HalfOpen;
        else
            cx.fail(L, "[" + std::to_string(a) + ", " + std::to_string(b) + "] spans " + std::to_string(b - a + 1) +
                           " (inclusive) or " + std::to_string(b - a) + " (half-open) indices of '" + st.agg.dims[d] +
                           "' but the partition's data has " + std::to_string(expected[d]));
        if (st.convention[i] != Convention::Unknown && st.convention[i] != c)
            cx.fail(L, "reads as " + std::string(c == Convention::Inclusive ? "inclusive" : "half-open") +
                           " while the partition's other ranges read the other way");
        st.convention[i] = c;
    }
}

// One entry of Partitions, as a Fragment (its box is placed later, once the convention is known).
void parse_partition(NcaParse& st, size_t i, const json& pj) {
    static const std::set<std::string> known_part = {"index", "location", "pdimensions", "dimensions", "pdirections",
                                                     "directions", "reverse", "flip", "units", "punits", "calendar",
                                                     "pcalendar", "part", "format", "subarray", "data", "sub_array"};
    const Context& cx = st.cx;
    const std::string P = "Partitions[" + std::to_string(i) + "]";
    st.convention.push_back(Convention::Unknown);
    if (!pj.is_object()) cx.fail(P, "expected an object, found " + pj.dump());
    for (auto it = pj.begin(); it != pj.end(); ++it)
        if (!known_part.count(it.key())) st.agg.warnings.push_back(cx.where + " " + P + "." + it.key() + ": unknown key ignored");

    Fragment f;
    f.where = partition_where(cx.where, i);
    f.reverse.assign(st.rank(), false);
    parse_partition_index(st, i, P, pj, f);
    std::string S;
    const json& sub = parse_subarray(st, P, pj, f, S);
    const std::vector<std::string> axis_names = parse_partition_axes(st, P, pj, sub, S, f);
    parse_partition_part(st, P, pj, axis_names.size(), f);
    const std::vector<uint64_t> expected = expected_counts(st, P, f, axis_names);
    parse_partition_reversal(st, P, pj, axis_names, f);
    parse_partition_units(st, P, pj, f);
    parse_partition_location(st, i, P, pj, expected);
    f.where.clear();  // the table's where_of gives it
    st.agg.fragments.push_back(f);
}

// Streaming (one pass, no tree of the Partitions list): each partition is
// read as it arrives, with the context given by the keys before the list.
// Should a context key follow the list (or a 0.3 pdirections change the part
// grammar), the partitions are read again in a second pass.

// Forgets the partitions read so far: each pass starts over.
void reset_partitions(NcaParse& st, bool context_fixed) {
    PartitionTable fresh;
    fresh.set_rank(st.rank());
    fresh.set_where_of([where = st.cx.where](size_t i) { return partition_where(where, i); });
    st.agg.fragments = std::move(fresh);
    st.agg.warnings.clear();  // nothing before the JSON warns
    st.convention.clear(), st.raw_locations.clear(), st.indices.clear(), st.has_index.clear();
    st.seen_index = SeenCells();
    st.first_lacks_index = st.first_lacks_location = false;
    st.partition_error = nullptr;
    st.saw_partition_directions = false;
    st.context_ok = context_fixed;
}

// The Partitions list opens: the context from the keys seen so far.
void start_partitions(NcaParse& st, const json& root_so_far) {
    st.root = root_so_far;
    try {
        st.ctx = parse_matrix(st);
        st.context_ok = true;
    } catch (const std::exception&) {
        st.context_ok = false;  // judged again once the whole JSON is known
    }
}

void on_partition(NcaParse& st, uint64_t i, const json& pj) {
    if (pj.is_object() && (pj.contains("pdirections") || pj.contains("directions"))) st.saw_partition_directions = true;
    if (!st.context_ok || st.partition_error || i >= st.limits.max_fragments) return;  // only counted
    try {
        parse_partition(st, i, pj);
    } catch (const std::exception&) {
        st.partition_error = std::current_exception();
    }
}

// One pass over the text (strict JSON, else the pseudo-JSON re-quoted).
void stream_pass(NcaParse& st, std::string_view text, bool context_fixed) {
    StreamCallbacks callbacks{[&](const json& root) { if (!context_fixed) start_partitions(st, root); },
                              [&](uint64_t i, const json& pj) { on_partition(st, i, pj); }};
    auto parse = [&](std::string_view t) {
        reset_partitions(st, context_fixed);
        return parse_json_streaming(t, "Partitions", callbacks, st.parts);
    };
    try {
        st.root = parse_lenient_json_with(text, parse);
    } catch (const JsonTextError& e) {
        st.cx.fail("", "at character " + std::to_string(e.position) + ": " + e.reason);
    }
}

// Partition 0 was read as if alone; with company it needed an index and a location.
void settle_first_partition(NcaParse& st, std::vector<std::string>& partition_warnings) {
    if (st.parts.count < 2 || st.convention.empty()) return;
    if (st.first_lacks_location) st.cx.fail("Partitions[0].location", "missing (only a single partition may omit it)");
    if (st.first_lacks_index)
        partition_warnings.insert(partition_warnings.begin() + static_cast<ptrdiff_t>(st.first_no_index_warning_at),
                                  st.agg.fragments.where(0) + ": no index (location alone places it)");
}

// The JSON, its size bounded first, and every partition in it.
void parse_json_and_partitions(NcaParse& st) {
    const Context& cx = st.cx;
    if (const Attribute* at = st.carrier.find_attribute(st.json_attr); at && at->length() > st.limits.max_metadata_bytes)
        cx.fail("", std::to_string(at->length()) + " bytes of JSON exceed the limit max_metadata=" +
                        std::to_string(st.limits.max_metadata_bytes));
    const std::string_view text = text_attribute_view(st.carrier, st.json_attr.c_str());  // not copied
    stream_pass(st, text, false);
    std::vector<std::string> partition_warnings = std::move(st.agg.warnings);
    st.agg.warnings.clear();
    check_json_root(st);
    const NcaParse::PartitionContext streamed_with = st.ctx;
    const bool streamed_ok = st.context_ok;
    st.ctx = parse_matrix(st);
    check_partitions(st);
    if (!streamed_ok || !(st.ctx == streamed_with)) {
        std::vector<std::string> top_warnings = std::move(st.agg.warnings);
        stream_pass(st, text, true);
        partition_warnings = std::move(st.agg.warnings);
        st.agg.warnings = std::move(top_warnings);
    }
    settle_first_partition(st, partition_warnings);
    if (st.partition_error) std::rethrow_exception(st.partition_error);
    for (auto& w : partition_warnings) st.agg.warnings.push_back(std::move(w));
    st.agg.matrix_dims = st.ctx.matrix_dims;
    st.agg.matrix_shape = st.ctx.matrix_shape;
}

// Partitions whose shape is unknown: follow the convention the others
// use; failing that, half-open if some stop equals the dimension length
// (impossible when inclusive), else inclusive (the spec text's reading; A1).
void settle_unknown_conventions(NcaParse& st) {
    auto& convention = st.convention;
    const Aggregate& agg = st.agg;
    size_t n_incl = 0, n_half = 0;
    for (auto c : convention) n_incl += c == Convention::Inclusive, n_half += c == Convention::HalfOpen;
    for (size_t i = 0; i < convention.size(); ++i) {
        if (convention[i] != Convention::Unknown) continue;
        Convention c = n_incl > n_half ? Convention::Inclusive : n_half > n_incl ? Convention::HalfOpen : Convention::Unknown;
        if (c == Convention::Unknown) {
            c = Convention::Inclusive;
            for (size_t j = 0; j < convention.size(); ++j)
                for (size_t d = 0; d < st.rank(); ++d)
                    if (st.raw_location(j, d).second == agg.shape[d] && agg.shape[d] > 0) c = Convention::HalfOpen;
        }
        convention[i] = c;
        st.agg.warnings.push_back(agg.fragments[i].where + ".location: no shape given; read as " +
                                  (c == Convention::Inclusive ? "inclusive" : "half-open"));
    }
}

// Per matrix dimension: index value -> the first partition with it and its
// master range. A table by index value while pmshape is no larger than the
// partitions could fill (a million partitions: no million-node map), else a map.
class IndexRanges {
public:
    struct Seen {
        size_t first = SIZE_MAX;  // SIZE_MAX: none yet
        uint64_t start = 0, count = 0;
    };
    IndexRanges(uint64_t extent, size_t partitions) {
        if (extent <= 4 * static_cast<uint64_t>(partitions) + 16) dense_.resize(extent);
    }
    // The entry recorded first for `index` (recording `s` when it is the first).
    const Seen& first_with(uint64_t index, const Seen& s) {
        Seen& slot = index < dense_.size() ? dense_[index] : sparse_[index];
        if (slot.first == SIZE_MAX) slot = s;
        return slot;
    }

private:
    std::vector<Seen> dense_;
    std::map<uint64_t, Seen> sparse_;
};

// The master box of partition i from its raw location, checked against the master.
void box_of(const NcaParse& st, size_t i, std::vector<uint64_t>& start, std::vector<uint64_t>& counts) {
    const Aggregate& agg = st.agg;
    for (size_t d = 0; d < st.rank(); ++d) {
        const auto [a, b] = st.raw_location(i, d);
        auto fail = [&](const std::string& reason) -> void {
            st.cx.fail("Partitions[" + std::to_string(i) + "].location[" + std::to_string(d) + "]", reason);
        };
        // b - a + 1 wraps for [0, 2^64-1]: checked, like the range test below.
        const uint64_t count = st.convention[i] == Convention::Inclusive ? checked::add_or_throw(b - a, 1, fail) : b - a;
        if (count == 0) fail("empty range [" + std::to_string(a) + ", " + std::to_string(b) + ")");
        if (!checked::fits_in(a, count, agg.shape[d]))
            fail("[" + std::to_string(a) + ", " + std::to_string(b) + "] runs past the master dimension '" + agg.dims[d] +
                 "' of length " + std::to_string(agg.shape[d]));
        start[d] = a;
        counts[d] = count;
    }
}

// Boxes, checked against the master; partitions sharing an index along a matrix dimension share its range.
void place_boxes(NcaParse& st) {
    Aggregate& agg = st.agg;
    const size_t n = agg.fragments.size();
    std::vector<IndexRanges> index_ranges;
    for (uint64_t extent : agg.matrix_shape) index_ranges.emplace_back(extent, n);
    std::vector<uint64_t> start(st.rank()), counts(st.rank());
    for (size_t i = 0; i < n; ++i) {
        box_of(st, i, start, counts);
        agg.fragments.set_box(i, start, counts);
        if (!st.has_index[i]) continue;
        const uint64_t* index = st.indices.data() + i * agg.matrix_dims.size();
        for (size_t j = 0; j < agg.matrix_dims.size(); ++j) {
            size_t d = static_cast<size_t>(st.master_dim(agg.matrix_dims[j]));
            const auto& first = index_ranges[j].first_with(index[j], {i, start[d], counts[d]});
            if (first.start != start[d] || first.count != counts[d])
                agg.warnings.push_back(st.cx.where + " Partitions[" + std::to_string(i) + "].location[" + std::to_string(d) +
                                       "]: differs from Partitions[" + std::to_string(first.first) +
                                       "], which has the same index[" + std::to_string(j) +
                                       "] = " + std::to_string(index[j]) + " (location wins)");
        }
    }
}

}  // namespace

Aggregate parse_nca_variable(const Dataset& file, const Variable& carrier, const PathPolicy& paths,
                             const AggregationLimits& limits) {
    const auto gen = nca_generation(carrier);
    if (!gen) throw AggregationError(paths.aggregation_file(), carrier.name, "not an NCA/CFA variable");
    const std::string prefix = *gen == NcaGeneration::Nca ? "nca_" : "cfa_";
    NcaParse st{file, carrier, paths, limits, *gen, prefix, prefix + "array",
                Context{paths.aggregation_file(), carrier.name + ":" + prefix + "array"}};
    st.agg.file = paths.aggregation_file();
    st.agg.name = carrier.name;
    st.agg.type = carrier.type;
    parse_master_dimensions(st);
    parse_presented_attributes(st);
    parse_json_and_partitions(st);
    settle_unknown_conventions(st);
    place_boxes(st);
    if (st.parts.count < st.matrix_cells)
        st.agg.warnings.push_back(st.cx.where + " Partitions: " + std::to_string(st.parts.count) +
                                  " partitions for a " + std::to_string(st.matrix_cells) +
                                  "-cell partition matrix (missing cells read as fill)");
    return std::move(st.agg);
}

}  // namespace ncafs::agg
