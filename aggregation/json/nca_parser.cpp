#include "aggregation/json/nca_parser.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>

#include "aggregation/model/error.hpp"
#include "aggregation/model/parse_deadline.hpp"
#include "aggregation/json/flat_json.hpp"
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

using JRef = FlatJson::Ref;

// A JSON path for messages ("Partitions[3].subarray.file"), spelled out only
// when a message needs it: a million partitions build no path strings.
class JsonPath {
public:
    JsonPath(std::string_view name) : name_(name) {}  // NOLINT: a top-level key reads as its path
    JsonPath(const char* name) : name_(name) {}       // NOLINT
    JsonPath(std::string_view name, size_t index) : name_(name), index_(index), indexed_(true) {}
    JsonPath operator/(std::string_view member) const { return JsonPath(this, member, 0, false); }
    JsonPath operator[](size_t index) const { return JsonPath(this, {}, index, true); }
    std::string str() const {
        std::string s = parent_ ? parent_->str() : std::string();
        if (!name_.empty()) s += (parent_ ? "." : "") + std::string(name_);
        if (indexed_) s += "[" + std::to_string(index_) + "]";
        return s;
    }

private:
    JsonPath(const JsonPath* parent, std::string_view name, size_t index, bool indexed)
        : parent_(parent), name_(name), index_(index), indexed_(indexed) {}
    const JsonPath* parent_ = nullptr;  // outlives this (paths are temporaries or locals below it)
    std::string_view name_;
    size_t index_ = 0;
    bool indexed_ = false;
};

// Everything a parse needs to say where it is.
struct Context {
    const std::string& file;
    std::string where;  // "tas:nca_array"
    [[noreturn]] void fail(const std::string& path, const std::string& reason) const {
        throw AggregationError(file, path.empty() ? where : where + " " + path, reason);
    }
    [[noreturn]] void fail(const JsonPath& path, const std::string& reason) const { fail(path.str(), reason); }
    [[noreturn]] void fail(const char* path, const std::string& reason) const { fail(std::string(path), reason); }
};

// The first of `names` that the object has (its value absent when none; name the first of names then).
struct Keyed {
    JRef value;
    const char* name;
};
Keyed find_key(JRef obj, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (JRef v = obj.find(n)) return {v, n};
    return {JRef(), *names.begin()};
}

uint64_t as_index(const Context& cx, JRef v, const JsonPath& path) {
    if (v.is_number_unsigned()) return v.get_uint64();
    if (v.is_number_integer()) {
        if (v.get_int64() < 0) cx.fail(path, "negative value " + v.dump());
        return static_cast<uint64_t>(v.get_int64());
    }
    if (v.is_number_float()) {
        double d = v.get_double();
        // 2^64 and beyond (and NaN) must not reach the cast: undefined behaviour.
        if (d >= 0 && d < 18446744073709551616.0 && d == std::floor(d)) return static_cast<uint64_t>(d);
    }
    cx.fail(path, "expected a non-negative integer, found " + v.dump());
}

// Into `out` (cleared first; its capacity reused from partition to partition).
void as_index_list(const Context& cx, JRef v, const JsonPath& path, std::vector<uint64_t>& out) {
    if (!v.is_array()) cx.fail(path, "expected a list of integers, found " + v.dump());
    out.clear();
    size_t i = 0;
    for (JRef e : v) {
        out.push_back(e.is_number_unsigned() ? e.get_uint64() : as_index(cx, e, path[i]));  // usual case: no path
        ++i;
    }
}

std::vector<uint64_t> as_index_list(const Context& cx, JRef v, const JsonPath& path) {
    std::vector<uint64_t> out;
    as_index_list(cx, v, path, out);
    return out;
}

std::vector<std::string> as_name_list(const Context& cx, JRef v, const JsonPath& path) {
    if (!v.is_array()) cx.fail(path, "expected a list of dimension names, found " + v.dump());
    std::vector<std::string> out;
    for (JRef e : v) {
        if (!e.is_string()) cx.fail(path[out.size()], "expected a name, found " + e.dump());
        out.emplace_back(e.str());
    }
    return out;
}

// Optional string (null and absent are "not given"); valid while the JSON is.
std::optional<std::string_view> as_opt_string(const Context& cx, JRef v, const JsonPath& path) {
    if (!v || v.is_null()) return std::nullopt;
    if (!v.is_string()) cx.fail(path, "expected a string, found " + v.dump());
    return v.str();
}

// Keys of an object that `known` lacks, warned about in nlohmann::json's order (sorted, once each).
void warn_unknown_keys(std::vector<std::string>& warnings, JRef obj, std::span<const std::string_view> known,
                       const std::string& where, const JsonPath& path) {
    auto is_known = [&](std::string_view k) { return std::find(known.begin(), known.end(), k) != known.end(); };
    bool any = false;
    for (JRef m : obj) any |= !is_known(m.key());
    if (!any) return;  // the usual case: nothing sorted, nothing built
    for (JRef m : obj.sorted_members())
        if (!is_known(m.key())) warnings.push_back(where + " " + (path / m.key()).str() + ": unknown key ignored");
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

bool directions_of(const Context& cx, JRef v, const JsonPath& path, std::map<std::string, bool>& out) {
    if (v.is_null()) return false;
    if (v.is_boolean()) return false;  // scalar master: an implied direction, no data effect
    if (!v.is_object()) cx.fail(path, "expected an object {dimension: true|false}, found " + v.dump());
    for (JRef m : v.sorted_members()) {
        bool b;
        if (m.is_boolean()) b = m.get_bool();
        else if (m.is_number_integer()) b = m.get_int64() != 0;
        else cx.fail(path / m.key(), "expected true or false, found " + m.dump());
        out[std::string(m.key())] = b;
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
    FlatJson root;  // the JSON without the Partitions list (streamed, partition by partition)
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
    // The partition being read: its location's [start, stop] per master dim.
    // Once read, a partition's pairs wait in the table's box columns (start,
    // stop) until place_boxes: no column of its own (48 bytes a partition).
    std::vector<uint64_t> raw_start, raw_stop;
    SeenCells seen_index;
    std::vector<uint64_t> indices;  // matrix_dims.size() per partition
    std::vector<bool> has_index;    // false: none or ignored
    // Partition 0 is read before anyone knows whether it is alone.
    bool first_lacks_index = false, first_lacks_location = false;
    size_t first_no_index_warning_at = 0;
    std::exception_ptr partition_error;  // the first partition that failed (reported after the JSON-wide checks)
    bool context_ok = false;  // ctx holds for the partitions being streamed
    uint64_t text_bytes = 0;  // of the JSON
    // Reused from partition to partition (no allocation each once warm).
    Fragment fragment;
    std::vector<uint64_t> index, pair;
    std::string file_name;
    std::vector<std::string_view> axis_names;

    size_t rank() const { return agg.dims.size(); }
    std::pair<uint64_t, uint64_t> raw_location(size_t i, size_t d) const {
        return {agg.fragments.start(i, d), agg.fragments.count(i, d)};  // (start, stop) until place_boxes
    }
    int master_dim(std::string_view n) const {
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
    const JRef root = st.root.root();
    if (!root.is_object()) cx.fail("", "expected a JSON object, found " + std::string(root.to_json().type_name()));

    static const std::set<std::string, std::less<>> known_top = {"directions", "pmshape", "pmdimensions", "pshape",
                                                                 "pdimensions", "base", "Partitions"};
    for (JRef m : root.sorted_members())
        if (!known_top.count(m.key())) st.agg.warnings.push_back(cx.where + " " + std::string(m.key()) + ": unknown key ignored");
}

// The part grammar depends on the generation (1.9): nca_array => 0.2 rules;
// cfa_array => 0.4 rules unless the 0.3-only keys directions/pdirections appear.
bool square_is_range(const NcaParse& st) {
    return st.gen == NcaGeneration::Cfa && !st.root.root().contains("directions") && !st.saw_partition_directions;
}

// Master directions, the partition matrix (0.1 spells it pshape/pdimensions at top level, A3), base.
NcaParse::PartitionContext parse_matrix(const NcaParse& st) {
    const Context& cx = st.cx;
    const JRef root = st.root.root();
    NcaParse::PartitionContext c;
    c.square_is_range = square_is_range(st);
    const std::string dims_attr = st.prefix + "dimensions";
    if (JRef dir = root.find("directions")) directions_of(cx, dir, "directions", c.master_directions);
    for (const auto& [name, _] : c.master_directions)
        if (st.master_dim(name) < 0)
            cx.fail("directions." + name, "unknown dimension name '" + name + "' (not in " + dims_attr + ")");
    if (const Keyed pd = find_key(root, {"pmdimensions", "pdimensions"}); pd.value) {
        c.matrix_dims = as_name_list(cx, pd.value, pd.name);
        for (size_t j = 0; j < c.matrix_dims.size(); ++j)
            if (st.master_dim(c.matrix_dims[j]) < 0)
                cx.fail(JsonPath(pd.name)[j], "unknown dimension name '" + c.matrix_dims[j] + "'");
    }
    if (const Keyed ps = find_key(root, {"pmshape", "pshape"}); ps.value) {
        c.matrix_shape = as_index_list(cx, ps.value, ps.name);
        if (c.matrix_shape.size() != c.matrix_dims.size())
            cx.fail(ps.name, "has " + std::to_string(c.matrix_shape.size()) + " entries but pmdimensions has " +
                                 std::to_string(c.matrix_dims.size()));
    } else {
        c.matrix_shape.assign(c.matrix_dims.size(), 1);  // 0.4: all ones for the given pmdimensions
    }
    if (JRef b = root.find("base"); b && !b.is_null()) {
        if (!b.is_string()) cx.fail("base", "expected a string, found " + b.dump());
        c.base_given = true;
        c.base = b.str();
    }
    return c;
}

// The Partitions list: present, a list, within max_fragments; compared with pmshape.
void check_partitions(NcaParse& st) {
    const Context& cx = st.cx;
    const JRef parts = st.root.root().find("Partitions");
    const uint64_t n = st.parts.count;
    if (st.parts.seen && n > st.limits.max_fragments)
        cx.fail("Partitions", std::to_string(n) + " partitions exceed the limit max_fragments=" +
                                  std::to_string(st.limits.max_fragments));
    charge_metadata(n, kPartitionCost, "partitions");
    if (!parts || parts.is_null()) cx.fail("Partitions", "missing");
    if (!parts.is_array()) cx.fail("Partitions", "expected a list, found " + parts.dump());
    if (st.parts.repeated) cx.fail("Partitions", "given twice");
    st.matrix_cells = element_count(st.ctx.matrix_shape);  // saturates: pmshape is hostile
    // Locations place partitions; pmshape and index only validate (a
    // disagreement is a warning, overlap is refused by the partition grid).
    if (n > st.matrix_cells)
        st.agg.warnings.push_back(cx.where + " Partitions: " + std::to_string(n) + " partitions but pmshape has room for " +
                                  std::to_string(st.matrix_cells) + " (locations place them)");
}

// A partition's index (validation only: location places the partition).
void parse_partition_index(NcaParse& st, size_t i, const JsonPath& P, JRef pj) {
    st.has_index.push_back(false);
    st.indices.resize(st.indices.size() + st.ctx.matrix_dims.size());
    if (JRef ix = pj.find("index"); ix && !ix.is_null()) {
        std::vector<uint64_t>& index = st.index;
        as_index_list(st.cx, ix, P / "index", index);
        if (auto problem = index_problem(index, st.ctx.matrix_shape, st.seen_index)) {
            st.agg.warnings.push_back(partition_where(st.cx.where, i) + ".index: " + *problem +
                                      " (ignored: location places the partition)");
            return;
        }
        st.has_index[i] = true;
        std::copy(index.begin(), index.end(), st.indices.end() - static_cast<ptrdiff_t>(index.size()));
    } else if (i > 0) {
        st.agg.warnings.push_back(partition_where(st.cx.where, i) + ": no index (location alone places it)");
    } else {  // warned about once a second partition shows up
        st.first_lacks_index = true;
        st.first_no_index_warning_at = st.agg.warnings.size();
    }
}

// `format` (of the partition or its sub-array): only what no reader here understands is refused.
void check_partition_format(const NcaParse& st, const JsonPath& P, const JsonPath& S, JRef pj, JRef sub) {
    const Context& cx = st.cx;
    const JsonPath partition_format = P / "format", sub_format = S / "format";
    std::optional<std::string_view> format = as_opt_string(cx, pj.find("format"), partition_format);
    const JsonPath* format_path = &partition_format;
    if (auto sf = as_opt_string(cx, sub.find("format"), sub_format)) format = sf, format_path = &sub_format;
    if (!format) return;
    std::string fl = lower(std::string(*format));
    // The reader is chosen by the file's magic number (codecs/open_dataset);
    // `format` only rules out what no reader here understands (PP, UM...).
    if (fl != "netcdf" && fl != "nc" && fl != "netcdf3" && fl != "netcdf4" && fl != "cdf" && fl != "hdf5" && fl != "ds" &&
        fl != "vds" && fl != "ncstream" && fl != "ncs")
        cx.fail(*format_path, "unsupported format \"" + std::string(*format) +
                                  "\" (only netCDF, ds, ncstream and vds sub-arrays can be read)");
}

// The sub-array's file: missing or "" => the aggregation file itself (1.8), else resolved by the path policy.
void parse_subarray_file(NcaParse& st, const JsonPath& S, JRef sub, Fragment& f) {
    auto file_name = as_opt_string(st.cx, sub.find("file"), S / "file");
    if (!file_name || file_name->empty()) {
        f.kind = FragmentKind::Self;
        f.path = st.paths.aggregation_file();
        return;
    }
    st.file_name.assign(*file_name);
    try {
        f.path = st.paths.resolve(st.file_name, st.ctx.base_given, st.ctx.base);
    } catch (const std::exception& e) {
        st.cx.fail(S / "file", e.what());
    }
}

// The sub-array object: format, file, variable, declared shape and type.
void parse_subarray(NcaParse& st, const JsonPath& P, const JsonPath& S, JRef pj, JRef sub, Fragment& f) {
    static constexpr std::string_view known_sub[] = {"file",   "ncvar",       "varid",  "shape",        "pshape",
                                                     "dtype",  "pdtype",      "format", "file_offset",  "lbpack",
                                                     "scale_factor", "add_offset", "endian", "_FillValue"};
    const Context& cx = st.cx;
    if (!sub || !sub.is_object()) cx.fail(S, "missing sub-array object (subarray/data/sub_array)");
    warn_unknown_keys(st.agg.warnings, sub, known_sub, cx.where, S);
    check_partition_format(st, P, S, pj, sub);
    parse_subarray_file(st, S, sub, f);
    if (auto nv = as_opt_string(cx, sub.find("ncvar"), S / "ncvar")) f.variable.assign(*nv);
    if (JRef vid = sub.find("varid"); vid && !vid.is_null()) {
        if (!vid.is_number_integer()) cx.fail(S / "varid", "expected an integer, found " + vid.dump());
        f.varid = vid.get_int64();  // 0.4: ignored when ncvar is set
    }
    if (f.variable.empty() && !f.varid) cx.fail(S, "names no variable (ncvar or varid)");
    if (f.kind == FragmentKind::Self && !f.variable.empty() && !st.file.find_variable(f.variable))
        cx.fail(S / "ncvar", "no variable '" + f.variable + "' in the aggregation file");
    if (const Keyed sh = find_key(sub, {"shape", "pshape"}); sh.value && !sh.value.is_null())
        as_index_list(cx, sh.value, S / sh.name, f.declared_shape);
    if (auto dt = as_opt_string(cx, find_key(sub, {"dtype", "pdtype"}).value, S / "dtype")) {
        f.declared_type = type_from_name(lower(std::string(*dt)));
        if (!f.declared_type)
            st.agg.warnings.push_back(cx.where + " " + (S / "dtype").str() + ": unknown type \"" + std::string(*dt) +
                                      "\" ignored");
    }
}

// Partition axes: pdimensions (names of aggregation-file dimensions) or the master's; checked against shape.
// The names (in st.axis_names) stay valid while the partition's JSON and the master's dimensions do.
void parse_partition_axes(NcaParse& st, const JsonPath& P, JRef pj, JRef sub, const JsonPath& S, Fragment& f) {
    const Context& cx = st.cx;
    auto& axis_names = st.axis_names;
    axis_names.clear();
    if (const Keyed pdims = find_key(pj, {"pdimensions", "dimensions"}); pdims.value && !pdims.value.is_null()) {
        const JsonPath key = P / pdims.name;
        if (!pdims.value.is_array()) cx.fail(key, "expected a list of dimension names, found " + pdims.value.dump());
        for (JRef e : pdims.value) {
            if (!e.is_string()) cx.fail(key[axis_names.size()], "expected a name, found " + e.dump());
            axis_names.push_back(e.str());
        }
        for (size_t k = 0; k < axis_names.size(); ++k) {
            int d = st.master_dim(axis_names[k]);
            if (d < 0 && !st.file.find_dimension(axis_names[k]))
                cx.fail(key[k], "unknown dimension name '" + std::string(axis_names[k]) + "'");
            for (size_t e = 0; e < k; ++e)
                if (axis_names[e] == axis_names[k])
                    cx.fail(key[k], "dimension '" + std::string(axis_names[k]) + "' repeated");
            f.axis_to_master.push_back(d);
        }
    } else {
        for (const auto& name : st.agg.dims) axis_names.push_back(name);
        for (size_t d = 0; d < st.rank(); ++d) f.axis_to_master.push_back(static_cast<int>(d));
    }
    const size_t K = axis_names.size();
    const Keyed shape = find_key(sub, {"shape", "pshape"});
    if (!f.declared_shape.empty() || (shape.value && K == 0)) {
        if (f.declared_shape.size() != K)
            cx.fail(S / shape.name, "has " + std::to_string(f.declared_shape.size()) + " entries but the partition has " +
                                        std::to_string(K) + " dimensions");
    }
}

// part: one selection per partition axis (sub-array order).
void parse_partition_part(const NcaParse& st, const JsonPath& P, JRef pj, size_t K, Fragment& f) {
    const Context& cx = st.cx;
    auto pt = as_opt_string(cx, pj.find("part"), P / "part");
    if (!pt) return;
    std::vector<IndexSelection> sels;
    try {
        sels = parse_part(std::string(*pt), st.ctx.square_is_range);
    } catch (const std::exception& e) {
        cx.fail(P / "part", e.what());
    }
    if (sels.empty()) return;
    if (sels.size() != K)
        cx.fail(P / "part", "has " + std::to_string(sels.size()) + " selections but the partition has " +
                                std::to_string(K) + " dimensions");
    for (size_t k = 0; k < K; ++k) {
        if (!f.declared_shape.empty() && sels[k].max_index() >= f.declared_shape[k])
            cx.fail(P / "part", "selection " + std::to_string(k) + " reaches index " +
                                    std::to_string(sels[k].max_index()) + " of a sub-array axis of length " +
                                    std::to_string(f.declared_shape[k]));
        f.part.push_back(std::move(sels[k]));
    }
}

// Shape of the partition's data array per master dim (0 = unknown): the expected box counts.
std::vector<uint64_t> expected_counts(const NcaParse& st, const JsonPath& P, const Fragment& f,
                                      const std::vector<std::string_view>& axis_names) {
    const size_t rank = st.rank();
    std::vector<uint64_t> expected(rank, 1);  // a master dim the partition lacks spans one index
    for (size_t k = 0; k < axis_names.size(); ++k) {
        uint64_t n = !f.part.empty() && f.part[k] ? f.part[k]->size() : !f.declared_shape.empty() ? f.declared_shape[k] : 0;
        int d = f.axis_to_master[k];
        if (d < 0) {
            if (n != 0 && n != 1)
                st.cx.fail((P / "dimensions")[k], "dimension '" + std::string(axis_names[k]) +
                                                      "' is not a master dimension, so it must have size 1, not " +
                                                      std::to_string(n));
            continue;
        }
        expected[d] = n;
    }
    return expected;
}

// The master dimension of a named partition axis (-1: a size-1 axis), or a failure naming `path`.
int axis_master_dim(const NcaParse& st, const Fragment& f, std::string_view name, const JsonPath& path) {
    const auto& axis_names = st.axis_names;
    auto it = std::find(axis_names.begin(), axis_names.end(), name);
    if (it == axis_names.end())
        st.cx.fail(path, "unknown dimension name '" + std::string(name) + "' (not a dimension of the partition)");
    return f.axis_to_master[static_cast<size_t>(it - axis_names.begin())];
}

// Reversal: pdirections vs master directions (0.2/0.3), reverse/flip lists (0.4).
void parse_partition_reversal(NcaParse& st, const JsonPath& P, JRef pj, Fragment& f) {
    const Context& cx = st.cx;
    if (const Keyed pd = find_key(pj, {"pdirections", "directions"}); pd.value) {
        std::map<std::string, bool> pdirs;
        directions_of(cx, pd.value, P / pd.name, pdirs);
        for (const auto& [name, dir] : pdirs) {
            int d = axis_master_dim(st, f, name, P / pd.name / name);
            if (d < 0) continue;  // size-1 axis: direction is harmless
            // Unspecified master direction: increasing (the usual sense).
            auto m = st.ctx.master_directions.find(name);
            f.reverse[static_cast<size_t>(d)] = dir != (m == st.ctx.master_directions.end() || m->second);
        }
    }
    if (const Keyed rv = find_key(pj, {"reverse", "flip"}); rv.value && !rv.value.is_null()) {
        const JsonPath key = P / rv.name;
        auto names = as_name_list(cx, rv.value, key);
        for (size_t j = 0; j < names.size(); ++j) {
            int d = axis_master_dim(st, f, names[j], key[j]);
            if (d >= 0) f.reverse[static_cast<size_t>(d)] = true;
        }
    }
}

// Units and calendar (missing => the master's).
void parse_partition_units(const NcaParse& st, const JsonPath& P, JRef pj, Fragment& f) {
    const Context& cx = st.cx;
    const Aggregate& agg = st.agg;
    const Keyed units = find_key(pj, {"units", "punits"}), calendar = find_key(pj, {"calendar", "pcalendar"});
    auto pu = as_opt_string(cx, units.value, P / units.name);
    auto pc = as_opt_string(cx, calendar.value, P / calendar.name);
    if (!pu && !pc) return;
    const std::string from = pu ? std::string(*pu) : agg.units, cal = pc ? std::string(*pc) : agg.calendar;
    try {
        f.units = units_converter(from, cal, agg.units, agg.calendar);
    } catch (const std::exception& e) {
        cx.fail(P / units.name, e.what());
    }
    if (!f.units.is_identity()) f.units_text = from + " -> " + agg.units;
}

// The convention one location range reads as, given the partition's extent along it (A1).
Convention range_convention(const NcaParse& st, size_t d, uint64_t expected, const JsonPath& L) {
    // Per dimension, the extent of the partition's data (after part, size-1
    // alignment and permutation) matches exactly one of stop-start+1
    // (inclusive, the text and every real writer) and stop-start (half-open,
    // every CDL example).
    const uint64_t a = st.raw_start[d], b = st.raw_stop[d];
    if (b - a != UINT64_MAX && b - a + 1 == expected) return Convention::Inclusive;
    if (b - a == expected) return Convention::HalfOpen;
    st.cx.fail(L, "[" + std::to_string(a) + ", " + std::to_string(b) + "] spans " + std::to_string(b - a + 1) +
                      " (inclusive) or " + std::to_string(b - a) + " (half-open) indices of '" + st.agg.dims[d] +
                      "' but the partition's data has " + std::to_string(expected));
}

// Location: raw pairs, and the convention they read as when the data's extent is known.
void parse_partition_location(NcaParse& st, size_t i, const JsonPath& P, JRef pj, const std::vector<uint64_t>& expected) {
    const Context& cx = st.cx;
    const size_t rank = st.rank();
    st.raw_start.clear(), st.raw_stop.clear();
    const JRef loc = pj.find("location");
    const JsonPath where = P / "location";
    if (!loc || loc.is_null()) {
        if (i > 0) cx.fail(where, "missing (only a single partition may omit it)");
        st.first_lacks_location = true;  // refused later should a second partition show up
        for (size_t d = 0; d < rank; ++d) st.raw_start.push_back(0), st.raw_stop.push_back(st.agg.shape[d]);
        st.convention[i] = Convention::HalfOpen;  // 0.4: one partition covering the whole master
        return;
    }
    if (!loc.is_array()) cx.fail(where, "expected a list of [start, stop] pairs, found " + loc.dump());
    if (loc.size() != rank)
        cx.fail(where, "has " + std::to_string(loc.size()) + " ranges but the master has " + std::to_string(rank) +
                           " dimensions");
    size_t d = 0;
    for (JRef range : loc) {
        auto& pair = st.pair;
        as_index_list(cx, range, where[d], pair);
        if (pair.size() != 2) cx.fail(where[d], "expected [start, stop], found " + range.dump());
        if (pair[1] < pair[0])
            cx.fail(where[d], "stop " + std::to_string(pair[1]) + " before start " + std::to_string(pair[0]));
        st.raw_start.push_back(pair[0]), st.raw_stop.push_back(pair[1]);
        ++d;
    }
    for (d = 0; d < rank; ++d) {
        if (expected[d] == 0) continue;
        const Convention c = range_convention(st, d, expected[d], where[d]);
        if (st.convention[i] != Convention::Unknown && st.convention[i] != c)
            cx.fail(where[d], "reads as " + std::string(c == Convention::Inclusive ? "inclusive" : "half-open") +
                                  " while the partition's other ranges read the other way");
        st.convention[i] = c;
    }
}

// Empties a reused Fragment (capacity kept) for the next partition.
void clear_fragment(Fragment& f, size_t rank) {
    f.start.clear(), f.count.clear();
    f.kind = FragmentKind::File;
    f.path.clear(), f.variable.clear(), f.group.clear();
    f.varid.reset();
    f.constant.clear(), f.axis_to_master.clear(), f.declared_shape.clear(), f.part.clear();
    f.reverse.assign(rank, false);
    f.units = Affine{};
    f.units_text.clear();
    f.declared_type.reset();
    f.where.clear();  // the table's where_of gives it
}

// One entry of Partitions, as a Fragment (its box is placed later, once the convention is known).
void parse_partition(NcaParse& st, size_t i, JRef pj) {
    static constexpr std::string_view known_part[] = {
        "index", "location", "pdimensions", "dimensions", "pdirections", "directions", "reverse", "flip", "units",
        "punits", "calendar", "pcalendar", "part", "format", "subarray", "data", "sub_array"};
    const Context& cx = st.cx;
    const JsonPath P("Partitions", i);
    st.convention.push_back(Convention::Unknown);
    if (!pj.is_object()) cx.fail(P, "expected an object, found " + pj.dump());
    warn_unknown_keys(st.agg.warnings, pj, known_part, cx.where, P);

    Fragment& f = st.fragment;
    clear_fragment(f, st.rank());
    parse_partition_index(st, i, P, pj);
    const Keyed sub = find_key(pj, {"subarray", "data", "sub_array"});
    const JsonPath S = P / sub.name;
    parse_subarray(st, P, S, pj, sub.value, f);
    parse_partition_axes(st, P, pj, sub.value, S, f);
    parse_partition_part(st, P, pj, st.axis_names.size(), f);
    const std::vector<uint64_t> expected = expected_counts(st, P, f, st.axis_names);
    parse_partition_reversal(st, P, pj, f);
    parse_partition_units(st, P, pj, f);
    parse_partition_location(st, i, P, pj, expected);
    st.agg.fragments.push_back(f);  // box empty: the location's pairs go in until place_boxes
    st.agg.fragments.set_box(st.agg.fragments.size() - 1, st.raw_start, st.raw_stop);
}

// Streaming (one pass, no tree of the Partitions list): each partition is
// read as it arrives, with the context given by the keys before the list.
// Should a context key follow the list (or a 0.3 pdirections change the part
// grammar), the partitions are read again in a second pass.

// Forgets the partitions read so far: each pass starts over.
void reset_partitions(NcaParse& st, bool context_fixed) {
    FragmentTable fresh;
    fresh.set_rank(st.rank());
    fresh.set_where_of([where = st.cx.where](size_t i) { return partition_where(where, i); });
    st.agg.fragments = std::move(fresh);
    st.agg.warnings.clear();  // nothing before the JSON warns
    st.convention.clear(), st.indices.clear(), st.has_index.clear();
    st.seen_index = SeenCells();
    st.first_lacks_index = st.first_lacks_location = false;
    st.partition_error = nullptr;
    st.saw_partition_directions = false;
    st.context_ok = context_fixed;
}

// The Partitions list opens: the context from the keys seen so far.
void start_partitions(NcaParse& st, const json& root_so_far) {
    st.root.assign(root_so_far);
    try {
        st.ctx = parse_matrix(st);
        st.context_ok = true;
    } catch (const std::exception&) {
        st.context_ok = false;  // judged again once the whole JSON is known
    }
}

// Room for the partitions pmshape promises, as far as the text can hold them
// (a partition takes kMinPartitionText bytes at least, whatever a hostile
// pmshape says): a million partitions grow no column by doubling.
void reserve_partitions(NcaParse& st) {
    constexpr uint64_t kMinPartitionText = 32;
    const uint64_t n = std::min({element_count(st.ctx.matrix_shape), st.text_bytes / kMinPartitionText,
                                 st.limits.max_fragments});
    st.agg.fragments.reserve(n);
    st.convention.reserve(n);
    st.indices.reserve(st.ctx.matrix_dims.size() * n);
    st.has_index.reserve(n);
}

void on_partition(NcaParse& st, uint64_t i, JRef pj) {
    check_parse_deadline();  // also while only counting: the stream stops here
    if (pj.is_object() && (pj.contains("pdirections") || pj.contains("directions"))) st.saw_partition_directions = true;
    if (!st.context_ok || st.partition_error || i >= st.limits.max_fragments) return;  // only counted
    if (i == 0) reserve_partitions(st);
    try {
        parse_partition(st, i, pj);
    } catch (const std::exception&) {
        st.partition_error = std::current_exception();
    }
}

// One pass over the text (strict JSON, else the pseudo-JSON re-quoted);
// `allocated` bytes from text.data() are readable (simdjson reads past the end).
void stream_pass(NcaParse& st, std::string_view text, size_t allocated, bool context_fixed) {
    StreamCallbacks callbacks{[&](const json& root) { if (!context_fixed) start_partitions(st, root); },
                              [&](uint64_t i, JRef pj) { on_partition(st, i, pj); }};
    auto parse = [&](std::string_view t) {
        reset_partitions(st, context_fixed);
        const size_t readable = t.data() == text.data() ? allocated : t.size();  // the re-quoted text: copied
        if (auto root = parse_json_streaming_simdjson(t, readable, "Partitions", callbacks, st.parts))
            return std::move(*root);
        reset_partitions(st, context_fixed);  // simdjson declined: nlohmann reads it (or says where it is wrong)
        return parse_json_streaming(t, "Partitions", callbacks, st.parts);
    };
    try {
        st.root.assign(parse_lenient_json_with(text, parse));
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
    const Attribute* at = st.carrier.find_attribute(st.json_attr);
    if (at && at->length() > st.limits.max_metadata_bytes)
        cx.fail("", std::to_string(at->length()) + " bytes of JSON exceed the limit max_metadata=" +
                        std::to_string(st.limits.max_metadata_bytes));
    const std::string_view text = text_attribute_view(st.carrier, st.json_attr.c_str());  // not copied
    st.text_bytes = text.size();
    const size_t allocated = text.empty() ? 0 : at->values.capacity();  // the reader's spare bytes included
    stream_pass(st, text, allocated, false);
    std::vector<std::string> partition_warnings = std::move(st.agg.warnings);
    st.agg.warnings.clear();
    check_json_root(st);
    const NcaParse::PartitionContext streamed_with = st.ctx;
    const bool streamed_ok = st.context_ok;
    st.ctx = parse_matrix(st);
    check_partitions(st);
    if (!streamed_ok || !(st.ctx == streamed_with)) {
        std::vector<std::string> top_warnings = std::move(st.agg.warnings);
        stream_pass(st, text, allocated, true);
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
        st.agg.warnings.push_back(agg.fragments.where(i) + ".location: no shape given; read as " +
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
