#include "aggregation/write/output_description.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <sstream>

#include "aggregation/model/calendar.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/write/compared_values.hpp"
#include "aggregation/write/output_names.hpp"

namespace ncafs::agg::cf_write {

namespace {

using netcdf::OutputValues;
using netcdf::OutputVariable;

// The output as described so far; values are written after every definition:
// non-aggregated values, fragment maps, then the string variables.
struct Description {
    WriterState& st;
    NcType map_type = NcType::Int;
    netcdf::OutputFile file;
    std::vector<OutputValues> non_aggregated_values, maps, strings;

    void add_dimension(const std::string& name, uint64_t length, bool unlimited) {
        file.dimensions.push_back({name, length, unlimited});
    }
};

// A variable's attributes as written: its calendar under the canonical name (fragments may spell it differently).
std::vector<Attribute> written_attributes(std::vector<Attribute> attrs) {
    for (auto& a : attrs)
        if (a.type == NcType::Char && a.name == "calendar")
            a = Attribute::text("calendar", canonical_calendar(attribute_text(&a)));
    return attrs;
}

// The default fill of a map's integer type (netCDF's NC_FILL_INT or NC_FILL_INT64).
long long integer_fill(NcType type) {
    std::array<uint8_t, 8> bytes{};
    std::memcpy(bytes.data(), default_fill_big_endian(type).data(), type_size(type));
    swap_from_big_endian(type, bytes.data(), 1);
    if (type == NcType::Int) {
        int32_t v = 0;
        std::memcpy(&v, bytes.data(), sizeof v);
        return v;
    }
    int64_t v = 0;
    std::memcpy(&v, bytes.data(), sizeof v);
    return v;
}

// The output's format: CDF-5 when a type or a map value needs it in classic
// mode; 64-bit maps past INT_MAX.
netcdf::OutputFormat output_format(const WriterState& st, NcType& map_type) {
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
    map_type = big_map ? NcType::Int64 : NcType::Int;
    using Format = netcdf::OutputFormat;
    return st.opt.classic ? (cdf5 ? Format::Cdf5 : Format::Classic64BitOffset) : Format::Netcdf4;
}

// The reference's dimensions, then the fragment, map and string-length dimensions.
void describe_dimensions(Description& out) {
    const WriterState& st = out.st;
    bool have_unlimited = false;
    for (const auto& d : st.files[0].dims) {
        // The record dimension stays one, aggregated or not (its length
        // in this file may be 0: readers take it from the fragment sizes).
        bool unlimited = d.unlimited && !(st.opt.classic && have_unlimited);
        have_unlimited |= unlimited;
        out.add_dimension(d.name, dim_len(st, d.name), unlimited);
    }
    for (const auto& [d, f] : st.fragment_dim) {
        auto ai = std::find(st.agg_dims.begin(), st.agg_dims.end(), d);
        out.add_dimension(f, ai == st.agg_dims.end() ? 1 : st.nf[static_cast<size_t>(ai - st.agg_dims.begin())], false);
    }
    for (const auto& [n, name] : st.map_j_dims) out.add_dimension(name, n, false);
    for (const auto& [n, name] : st.map_i_dims) out.add_dimension(name, n, false);
    for (auto& s : st.sigs)
        if (st.opt.classic) out.add_dimension(s.strlen_dim, uri_width(st, s.fragment_files), false);
}

// The reference's global attributes; Conventions becomes CF-1.13 plus the fragments' non-CF words.
void describe_global_attributes(Description& out) {
    const std::vector<Attribute>& globals = out.st.files[0].globals;
    std::vector<Attribute>& written = out.file.attributes;
    for (const auto& a : globals)
        if (a.name != "Conventions") written.push_back(a);
    std::string conv;
    for (const auto& a : globals)
        if (a.name == "Conventions") {
            std::istringstream in(attribute_text(&a));
            std::string w;
            while (in >> w)
                if (w.rfind("CF-", 0) != 0 && w.rfind("CFA", 0) != 0) conv += " " + w;
        }
    conv = "CF-1.13" + conv;
    written.push_back(Attribute::text("Conventions", conv));
    // The fragments' own Conventions, which the presented dataset shows.
    for (const auto& a : globals)
        if (a.name == "Conventions" && a.type == NcType::Char && attribute_text(&a) != conv)
            written.push_back(Attribute{kFragmentConventions, NcType::Char, a.values});
}

// A non-aggregated variable: as in the reference, with its values.
void describe_non_aggregated_variable(Description& out, const VarInfo& v) {
    out.file.variables.push_back(OutputVariable{v.name, v.type, false, v.dims, written_attributes(v.attributes)});
    out.non_aggregated_values.push_back({v.name, netcdf::ElementBytes{out.st.ref_values.at(v.name)}, "variable data"});
    ++out.st.summary.non_aggregated_variables;
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

// The identifiers of aggregated variable v: one name for every fragment, so a scalar.
void describe_identifiers(Description& out, const VarInfo& v, const std::string& ident) {
    if (out.st.opt.classic) {
        const std::string sd = unique_name("strlen_" + ident, out.st.taken);
        out.add_dimension(sd, std::max<size_t>(1, v.name.size()), false);
        out.file.variables.push_back(OutputVariable{ident, NcType::Char, false, {sd}, {}});
        out.strings.push_back({ident, netcdf::Strings{{v.name}}, "char variable"});
    } else {
        out.file.variables.push_back(OutputVariable{ident, NcType::Char, true, {}, {}});
        out.strings.push_back({ident, netcdf::Strings{{v.name}}, "string variable"});
    }
}

// The variable of v's name among the lead fragment's (v itself when it has none).
const VarInfo& lead_variable(const VarInfo& v, const std::vector<VarInfo>& lead_vars) {
    for (const auto& x : lead_vars)
        if (x.name == v.name) return x;
    return v;
}

// An aggregated variable: a scalar with aggregated_dimensions/aggregated_data, and its identifiers.
void describe_aggregation_variable(Description& out, const VarInfo& v, const std::vector<VarInfo>& lead_vars) {
    WriterState& st = out.st;
    // Attributes (units above all) of the first fragment in aggregation
    // order: the aggregation then reads like its ncrcat concatenation.
    NcType type = v.type;
    std::vector<Attribute> attrs = aggregation_attributes(st, v, lead_variable(v, lead_vars), type);
    const Signature& s = st.sigs[st.sig_of.at(v.dims)];
    std::string dims_text;
    for (const auto& d : v.dims) dims_text += (dims_text.empty() ? "" : " ") + d;
    const std::string ident = unique_name("fragment_identifiers_" + v.name, st.taken);
    attrs.push_back(Attribute::text("aggregated_dimensions", dims_text));
    attrs.push_back(
        Attribute::text("aggregated_data", "map: " + s.map_name + " uris: " + s.uris_name + " identifiers: " + ident));
    out.file.variables.push_back(OutputVariable{v.name, type, false, {}, written_attributes(std::move(attrs))});
    ++st.summary.aggregation_variables;
    describe_identifiers(out, v, ident);
}

// A signature's fragment map (rows of block lengths, padded with fill) and its uris.
void describe_fragment_variables(Description& out, const Signature& s) {
    const WriterState& st = out.st;
    out.file.variables.push_back(OutputVariable{s.map_name, out.map_type, false, {s.map_j, s.map_i}, {}});
    uint64_t width = 0;
    for (const auto& [n, name] : st.map_i_dims)
        if (name == s.map_i) width = n;
    std::vector<long long> m(s.rows.size() * width, integer_fill(out.map_type));
    for (size_t r = 0; r < s.rows.size(); ++r)
        for (size_t c = 0; c < s.rows[r].size(); ++c) m[r * width + c] = static_cast<long long>(s.rows[r][c]);
    out.maps.push_back({s.map_name, netcdf::Integers{std::move(m)}, "fragment map"});
    const netcdf::PickedStrings uris{&st.file_uris, &s.fragment_files};
    if (st.opt.classic) {
        std::vector<std::string> dims = s.fdims;
        dims.push_back(s.strlen_dim);
        out.file.variables.push_back(OutputVariable{s.uris_name, NcType::Char, false, dims, {}});
        out.strings.push_back({s.uris_name, uris, "char variable"});
    } else {
        out.file.variables.push_back(OutputVariable{s.uris_name, NcType::Char, true, s.fdims, {}});
        out.strings.push_back({s.uris_name, uris, "string variable"});
    }
}

}  // namespace

netcdf::OutputFile describe_output(WriterState& st, const std::vector<VarInfo>& lead_vars) {
    Description out{st};
    out.file.format = output_format(st, out.map_type);
    describe_dimensions(out);
    describe_global_attributes(out);
    for (const auto& v : st.files[0].vars) {
        if (!st.aggregated_vars.count(v.name)) describe_non_aggregated_variable(out, v);
        else describe_aggregation_variable(out, v, lead_vars);
    }
    for (const auto& s : st.sigs) describe_fragment_variables(out, s);
    for (auto* values : {&out.non_aggregated_values, &out.maps, &out.strings})
        for (auto& v : *values) out.file.values.push_back(std::move(v));
    return std::move(out.file);
}

}  // namespace ncafs::agg::cf_write
