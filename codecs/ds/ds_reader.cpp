#include "codecs/ds/ds_reader.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>

#include "codecs/ds/ds_array_source.hpp"
#include "codecs/ds/ds_attributes.hpp"
#include "codecs/ds/ds_json.hpp"
#include "codecs/ds/ds_types.hpp"
#include "codecs/error.hpp"
#include "codecs/memory_source.hpp"
#include "codecs/json_depth.hpp"
#include "io/metadata_budget.hpp"
#include "io/open_file.hpp"

namespace ncafs::ds {

namespace {

constexpr uint64_t kMaxHeaderBytes = 256u << 20;  // a header line longer than this is not read

struct HeaderLine {
    bool experimental = false;
    uint64_t header_start = 0;  // first byte of the JSON
    std::string json;
    uint64_t body_start = 0;
};

HeaderLine read_header_line(const OpenFile& f) {
    const uint64_t size = f.size();
    std::string text;
    uint64_t pos = 0;
    size_t lf = std::string::npos;
    size_t search_from = 0;
    HeaderLine h;
    auto read_more = [&]() -> bool {
        if (pos >= size) return false;
        const uint64_t step = std::min<uint64_t>({size - pos, std::max<uint64_t>(pos, 65536), kMaxHeaderBytes + 16 - pos});
        if (step == 0) return false;
        text.resize(pos + step);
        f.pread_exact(text.data() + pos, step, pos);
        pos += step;
        return true;
    };
    auto find_lf = [&](size_t from) {
        while (true) {
            size_t k = text.find('\n', std::max(from, search_from));
            if (k != std::string::npos) return k;
            search_from = text.size();
            if (!read_more()) return std::string::npos;
        }
    };
    read_more();
    if (text.empty()) throw FormatError(f.path(), 0, "empty file, not a ds file");
    if (text.rfind("ds-", 0) == 0) {
        lf = find_lf(0);
        if (lf == std::string::npos || lf > 64) throw FormatError(f.path(), 0, "unterminated ds version line");
        const std::string version = text.substr(0, lf);
        if (version != "ds-1.0")
            throw FormatError(f.path(), 0, "unsupported ds version line '" + version + "' (only ds-1.0 is read)");
        h.header_start = lf + 1;
    } else if (text[0] == '{') {
        h.experimental = true;
        h.header_start = 0;
    } else {
        throw FormatError(f.path(), 0, "not a ds file (no 'ds-1.0' line, no JSON header)");
    }
    search_from = h.header_start;
    const size_t end = find_lf(h.header_start);
    if (end == std::string::npos) {
        if (pos >= size)
            throw FormatError(f.path(), size, "header line not terminated by a newline (truncated file?)");
        throw FormatError(f.path(), h.header_start, "header line longer than " + std::to_string(kMaxHeaderBytes) + " bytes");
    }
    h.json = text.substr(h.header_start, end - h.header_start);
    h.body_start = end + 1;
    return h;
}

struct Context {
    const std::string& path;
    uint64_t header_start;
    [[noreturn]] void fail(const std::string& json_path, const std::string& reason) const {
        throw FormatError(path, header_start, "header " + json_path + ": " + reason);
    }
};

uint64_t non_negative_integer(const Context& c, const Json& v, const std::string& where) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) {
        if (v.get<int64_t>() < 0) c.fail(where, "negative value " + std::to_string(v.get<int64_t>()));
        return static_cast<uint64_t>(v.get<int64_t>());
    }
    // 2.0.x wrote numpy values; accept integral floats.
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (d >= 0 && d < 9.0e15 && d == static_cast<double>(static_cast<uint64_t>(d))) return static_cast<uint64_t>(d);
    }
    c.fail(where, "expected a non-negative integer, found " + python_json_dumps(v));
}

std::string unescape_name(const std::string& key) {
    if (key.size() >= 2 && key[0] == '\\' && (key[1] == '.' || key[1] == '\\')) return key.substr(1);
    return key;
}

// A variable's layout, validated against the body.
struct ParsedVariable {
    std::string name;
    DsType type = DsType::Float64;
    std::optional<std::vector<uint64_t>> size;  // nullopt: empty variable
    std::vector<std::string> dims;
    uint64_t elements = 0;
    bool little_endian = false;
    bool missing = false;
    uint64_t offset = 0, len = 0;
    std::vector<std::pair<std::string, Json>> attributes;
};

// .type (with .dsize in the experimental layout) -> the ds type.
DsType parse_variable_type(const Context& c, const std::string& where, const Json& meta, bool experimental) {
    const Json& type = meta[".type"];
    if (!type.is_string()) c.fail(where + ".type", "expected a type name, found " + python_json_dumps(type));
    const std::string tname = type.get<std::string>();
    std::optional<DsType> t;
    if (experimental) {
        if (!meta.contains(".dsize")) c.fail(where, "experimental layout without .dsize");
        const Json& ds = meta[".dsize"];
        if (!ds.is_number_integer()) c.fail(where + ".dsize", "expected an integer");
        t = ds_type_from_experimental(tname, ds.get<int64_t>());
        if (!t) c.fail(where + ".type", "unknown type '" + tname + "' with .dsize " + std::to_string(ds.get<int64_t>()));
    } else {
        t = ds_type_from_name(tname);
        if (!t) c.fail(where + ".type", "unknown type '" + tname + "'");
    }
    return *t;
}

// .size and .dims, which must agree (nullopt size: an empty variable).
void parse_variable_shape(const Context& c, const std::string& where, const Json& meta, bool experimental,
                          ParsedVariable& v) {
    const Json& size = meta[".size"];
    if (size.is_array()) {
        if (size.size() > kMaxVariableRank) c.fail(where + ".size", "rank " + std::to_string(size.size()) + " is absurd");
        std::vector<uint64_t> s;
        for (size_t i = 0; i < size.size(); ++i)
            s.push_back(non_negative_integer(c, size[i], where + ".size[" + std::to_string(i) + "]"));
        v.size = s;
    } else if (size.is_null()) {
        v.size = std::nullopt;
    } else if (experimental && size.is_number()) {
        // 2.0.x: a scalar has .size 1; an integer n otherwise means [n].
        v.size = std::vector<uint64_t>{non_negative_integer(c, size, where + ".size")};
    } else {
        c.fail(where + ".size", "expected a list of lengths or null, found " + python_json_dumps(size));
    }
    if (meta.contains(".dims")) {
        const Json& dims = meta[".dims"];
        if (!dims.is_array()) c.fail(where + ".dims", "expected a list of names");
        for (const auto& d : dims) {
            if (!d.is_string()) c.fail(where + ".dims", "dimension name is not a string: " + python_json_dumps(d));
            v.dims.push_back(d.get<std::string>());
        }
    }
    if (experimental && v.size && v.size->size() == 1 && (*v.size)[0] == 1 && v.dims.empty()) v.size->clear();
    if (v.size && v.dims.size() != v.size->size())
        c.fail(where, std::to_string(v.dims.size()) + " dimension names for " + std::to_string(v.size->size()) +
                          " lengths");
    if (!v.size && !v.dims.empty()) c.fail(where, "empty variable (.size null) with dimensions");
}

// .offset/.len inside the body; the element count, with overflow and plausibility checks.
void parse_variable_block(const Context& c, const std::string& where, const Json& meta, uint64_t body_size,
                          ParsedVariable& v) {
    v.offset = non_negative_integer(c, meta[".offset"], where + ".offset");
    v.len = non_negative_integer(c, meta[".len"], where + ".len");
    if (v.offset > body_size || v.len > body_size - v.offset)
        c.fail(where, "block [" + std::to_string(v.offset) + ", +" + std::to_string(v.len) +
                          ") extends past the end of the data (" + std::to_string(body_size) + " bytes)");
    // Every element takes at least one bit of the block (mask, bool bit, value, length word).
    v.elements = 0;
    if (v.size && std::find(v.size->begin(), v.size->end(), 0) == v.size->end()) {
        uint64_t n = 1;
        for (uint64_t d : *v.size)
            if (__builtin_mul_overflow(n, d, &n) || n / 8 > v.len)
                c.fail(where + ".size", "size does not fit in the block of " + std::to_string(v.len) + " bytes");
        v.elements = n;
    }
}

// .missing and .endian (required for multi-byte values).
void parse_variable_encoding(const Context& c, const std::string& where, const Json& meta, ParsedVariable& v) {
    if (meta.contains(".missing")) {
        const Json& m = meta[".missing"];
        if (!m.is_boolean()) c.fail(where + ".missing", "expected true or false");
        v.missing = m.get<bool>();
    }
    const bool needs_order = v.elements > 0 && (ds_number_width(v.type) > 1 || is_string_type(v.type));
    if (meta.contains(".endian")) {
        const Json& e = meta[".endian"];
        if (e == "l") v.little_endian = true;
        else if (e == "b") v.little_endian = false;
        else c.fail(where + ".endian", "expected \"l\" or \"b\", found " + python_json_dumps(e));
    } else if (needs_order) {
        c.fail(where, "no .endian for multi-byte values");
    }
}

std::optional<ParsedVariable> parse_variable(const Context& c, const std::string& key, const Json& meta,
                                             bool experimental, uint64_t body_size) {
    const std::string where = "variable \"" + key + "\"";
    if (!meta.is_object()) c.fail(where, "expected an object");
    ParsedVariable v;
    v.name = unescape_name(key);
    // Metadata-only variables (no data described) are skipped, as ds-format does.
    if (!meta.contains(".type") || !meta.contains(".offset") || !meta.contains(".len") || !meta.contains(".size"))
        return std::nullopt;
    v.type = parse_variable_type(c, where, meta, experimental);
    parse_variable_shape(c, where, meta, experimental, v);
    parse_variable_block(c, where, meta, body_size, v);
    parse_variable_encoding(c, where, meta, v);
    for (const auto& [k, val] : meta.items())
        if (k.empty() || k[0] != '.') v.attributes.emplace_back(k, val);
    return v;
}

// The _FillValue attribute converted to the variable's type, or nullopt.
std::optional<Attribute> fill_attribute_for(NcType t, const Json& value) {
    if (t == NcType::Char) {
        if (value.is_string() && value.get<std::string>().size() == 1) return Attribute::text("_FillValue", value.get<std::string>());
        return std::nullopt;
    }
    auto a = json_to_attribute("_FillValue", value);
    if (!a || a->type == NcType::Char || a->length() != 1) return std::nullopt;
    Attribute out{"_FillValue", t, std::vector<uint8_t>(type_size(t))};
    if (convert_elements(a->type, a->values.data(), t, out.values.data(), 1) != 0) return std::nullopt;
    // Exact only: a converted value that differs would mask the wrong elements.
    if (a->type != NcType::Char && element_as_double(t, out.values.data(), 0) != a->as_double(0) &&
        !(a->as_double(0) != a->as_double(0)))
        return std::nullopt;
    return out;
}

std::array<uint8_t, 8> default_fill_native(NcType t) {
    std::array<uint8_t, 8> b{};
    std::memcpy(b.data(), default_fill_big_endian(t).data(), type_size(t));
    swap_from_big_endian(t, b.data(), 1);
    return b;
}

}  // namespace

bool has_ds_signature(std::span<const uint8_t> b) {
    if (b.size() >= 3 && b[0] == 'd' && b[1] == 's' && b[2] == '-') return true;
    if (b.empty() || b[0] != '{') return false;
    for (size_t i = 1; i < b.size(); ++i) {
        if (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') continue;
        return b[i] == '"' || b[i] == '}';
    }
    return false;
}

Dataset open_ds_dataset(const std::string& path) { return open_ds_dataset(OpenFile::open(path)); }

namespace {

// The header's entries: global attributes (".") and the variables that describe data.
std::vector<ParsedVariable> parse_header_entries(const Context& c, const Json& header, const HeaderLine& h,
                                                 uint64_t body_size, Dataset& d) {
    std::vector<ParsedVariable> parsed;
    for (const auto& [key, value] : header.items()) {
        if (key == ".") {
            if (!value.is_object()) c.fail("\".\"", "global attributes are not an object");
            for (const auto& [an, av] : value.items())
                if (auto a = json_to_attribute(an, av)) d.attributes.push_back(std::move(*a));
            continue;
        }
        if (!key.empty() && key[0] == '.') continue;  // reserved keys
        if (auto v = parse_variable(c, key, value, h.experimental, body_size)) parsed.push_back(std::move(*v));
    }
    return parsed;
}

// Dimensions: first use defines the length; later uses must agree.
std::map<std::string, size_t> define_dimensions(const Context& c, const std::vector<ParsedVariable>& parsed, Dataset& d) {
    std::map<std::string, size_t> dim_index;
    for (const auto& v : parsed) {
        if (!v.size) continue;
        for (size_t i = 0; i < v.dims.size(); ++i) {
            auto [it, inserted] = dim_index.emplace(v.dims[i], d.dimensions.size());
            if (inserted) {
                d.dimensions.push_back(Dimension{v.dims[i], (*v.size)[i], false});
            } else if (d.dimensions[it->second].length != (*v.size)[i]) {
                c.fail("variable \"" + v.name + "\".size",
                       "dimension " + v.dims[i] + " has length " + std::to_string((*v.size)[i]) + " here but " +
                           std::to_string(d.dimensions[it->second].length) + " in an earlier variable");
            }
        }
    }
    return dim_index;
}

// The variable's attributes; its fill value (a default one when masked or empty and none is given).
std::optional<Attribute> variable_attributes(const ParsedVariable& v, Variable& var) {
    std::optional<Attribute> fill;
    for (const auto& [an, av] : v.attributes) {
        if (an == "_FillValue") {
            fill = fill_attribute_for(var.type, av);
            if (fill) var.attributes.push_back(*fill);
            continue;
        }
        if (auto a = json_to_attribute(an, av)) var.attributes.push_back(std::move(*a));
    }
    if ((v.missing || !v.size) && !fill) {
        Attribute a{"_FillValue", var.type, std::vector<uint8_t>(type_size(var.type))};
        const auto b = default_fill_native(var.type);
        std::memcpy(a.values.data(), b.data(), a.values.size());
        var.attributes.push_back(a);
        fill = a;
    }
    return fill;
}

// Where and how the variable's block is read.
DsBlockInfo block_info(const HeaderLine& h, const ParsedVariable& v, NcType type, const std::optional<Attribute>& fill) {
    DsBlockInfo info;
    info.variable = v.name;
    info.type = v.type;
    info.ds_shape = v.size.value_or(std::vector<uint64_t>{});
    info.elements = v.elements;
    info.little_endian = v.little_endian;
    info.has_mask = v.missing && v.elements > 0;
    info.block_offset = h.body_start + v.offset;
    info.block_length = v.len;
    std::memcpy(info.fill.data(), fill ? fill->values.data() : default_fill_native(type).data(), type_size(type));
    if (!v.size) {
        // A masked scalar: one element, all fill; a mask of one set bit
        // is implied, no bytes are read.
        info.ds_shape = {};
        info.elements = 1;
        info.has_mask = false;
    }
    return info;
}

// One presented variable; strings gain a NAME_strlen dimension as long as the longest string.
Variable make_variable(const std::shared_ptr<const OpenFile>& file, const HeaderLine& h, const ParsedVariable& v,
                       Dataset& d, std::map<std::string, size_t>& dim_index) {
    Variable var;
    var.name = v.name;
    var.type = nc_type_for(v.type);
    for (const auto& dn : v.dims) var.dimids.push_back(dim_index.at(dn));
    const std::optional<Attribute> fill = variable_attributes(v, var);
    const bool empty_variable = !v.size;
    DsBlockInfo info = block_info(h, v, var.type, fill);
    if (is_string_type(v.type)) {
        info.string_length = 1;
        if (!empty_variable) {
            // Learn the longest string first (a scan of the length words).
            DsArraySource probe(file, info);
            info.string_length = std::max<uint64_t>(1, probe.longest_string());
        }
        std::string dim_name = v.name + "_strlen";
        while (dim_index.count(dim_name)) dim_name += "_";
        dim_index.emplace(dim_name, d.dimensions.size());
        d.dimensions.push_back(Dimension{dim_name, info.string_length, false});
        var.dimids.push_back(d.dimensions.size() - 1);
    }
    if (empty_variable) {
        std::vector<uint64_t> shape;
        if (is_string_type(v.type)) shape.push_back(info.string_length);
        // Every element the fill value: how ds-format stores a masked scalar.
        var.source = std::make_shared<ConstantSource>(
            var.type, shape, std::vector<uint8_t>(info.fill.begin(), info.fill.begin() + type_size(var.type)),
            "ds fill");
    } else {
        var.source = std::make_shared<DsArraySource>(file, info);
    }
    return var;
}

}  // namespace

Dataset open_ds_dataset(std::shared_ptr<const OpenFile> file) {
    const std::string& path = file->path();
    const HeaderLine h = read_header_line(*file);
    const Context c{path, h.header_start};
    Json header;
    // The parsed tree of a dense JSON text takes many times its bytes: counted before it is built.
    charge_parsed_json(h.json, "header JSON");
    try {
        header = parse_python_json(h.json);
    } catch (const JsonSyntaxError& e) {
        throw FormatError(path, h.header_start + e.position, "header: " + e.reason);
    }
    if (!header.is_object()) c.fail("", "the header is not a JSON object");
    const uint64_t body_size = file->size() - h.body_start;

    charge_metadata(header.size(), kVariableCost, "header entries");
    Dataset d;
    d.origin = path;
    const std::vector<ParsedVariable> parsed = parse_header_entries(c, header, h, body_size, d);
    std::map<std::string, size_t> dim_index = define_dimensions(c, parsed, d);
    for (const auto& v : parsed) d.variables.push_back(make_variable(file, h, v, d, dim_index));
    return d;
}

}  // namespace ncafs::ds
