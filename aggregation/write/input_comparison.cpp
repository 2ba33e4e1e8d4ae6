#include "aggregation/write/input_comparison.hpp"

#include <algorithm>
#include <string_view>

#include "aggregation/model/calendar.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "aggregation/write/compared_values.hpp"

namespace ncafs::agg::cf_write {

namespace {

bool is_in(const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
}

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

// Dimensions missing on either side, and lengths that differ along a non-aggregated one.
void compare_dimensions(const FileInfo& R, const FileInfo& F, const Reference& ref, std::vector<std::string>& problems) {
    for (const auto& rd : R.dims) {
        auto it = std::find_if(F.dims.begin(), F.dims.end(), [&](const Dimension& x) { return x.name == rd.name; });
        if (it == F.dims.end()) problems.push_back(F.path + ": has no dimension " + rd.name + " (" + R.path + " has)");
        else if (!is_in(ref.agg_dims, rd.name) && it->length != rd.length)
            problems.push_back(F.path + ": dimension " + rd.name + " has length " + std::to_string(it->length) + ", " +
                               R.path + " has " + std::to_string(rd.length));
    }
    for (const auto& fd : F.dims)
        if (std::none_of(R.dims.begin(), R.dims.end(), [&](const Dimension& x) { return x.name == fd.name; }))
            problems.push_back(F.path + ": has a dimension " + fd.name + " that " + R.path + " lacks");
}

// A type that differs: converted on read between numeric types of an aggregated variable, else refused.
void compare_type(const FileInfo& R, const FileInfo& F, const VarInfo& rv, const VarInfo& v, bool agg, Findings& found) {
    if (v.type == rv.type) return;
    if (agg && v.type != NcType::Char && rv.type != NcType::Char)  // CF-1.13: any numeric type
        found.warnings.push_back(F.path + ": variable " + rv.name + " is " + std::string(type_name(v.type)) + ", " +
                                 R.path + " has " + std::string(type_name(rv.type)) + " (converted on read)");
    else
        found.problems.push_back(F.path + ": variable " + rv.name + " has type " + std::string(type_name(v.type)) +
                                 ", " + R.path + " has " + std::string(type_name(rv.type)));
}

// Units of an aggregated variable that differ: converted on read when UDUNITS-2 can, else refused.
void compare_units(const FileInfo& R, const FileInfo& F, const VarInfo& rv, const VarInfo& v, Findings& found) {
    const Attribute *ra = rv.find("units"), *fa = v.find("units");
    try {
        units_converter(attribute_text(fa), attribute_text(v.find("calendar")), attribute_text(ra),
                        attribute_text(rv.find("calendar")));
        found.warnings.push_back(F.path + ": " + rv.name + ":units = " + value_text(fa) + ", " + R.path + " has " +
                                 value_text(ra) + " (converted on read)");
    } catch (const std::exception& e) {
        found.problems.push_back(F.path + ": " + rv.name + ":units: " + e.what());
    }
}

// Attribute n of rv (reference) and v (F's): encodings recorded, aliases and convertible units accepted.
void compare_attribute(const FileInfo& R, const FileInfo& F, const VarInfo& rv, const VarInfo& v, bool agg,
                       const std::string& n, Findings& found) {
    const Attribute *ra = rv.find(n), *fa = v.find(n);
    if (auto e = kEncodingAttributes.find(n); agg && e != kEncodingAttributes.end()) {
        if (fa) found.encodings.push_back({&rv.name, &*e, value_text(fa)});
        else if (ra) found.encodings.push_back({&rv.name, &*e, "(none)"});
        return;
    }
    if (same_attribute(ra, fa)) return;
    if (n == "calendar" && same_calendar(attribute_text(ra), attribute_text(fa))) return;  // aliases, CF-1.13 4.4.3
    if (agg && n == "units" && ra && fa) {
        compare_units(R, F, rv, v, found);
        return;
    }
    found.problems.push_back(F.path + ": attribute " + rv.name + ":" + n + " = " + value_text(fa) + " but " + R.path +
                             " has " + value_text(ra));
}

// Every reference variable against F's of the same name, then F's variables the reference lacks.
void compare_variables(const FileInfo& R, const FileInfo& F, const Reference& ref, Findings& found) {
    std::vector<const VarInfo*> fv;  // F's variables by name
    fv.reserve(F.vars.size());
    for (const auto& v : F.vars) fv.push_back(&v);
    auto by_name = [](const VarInfo* a, const VarInfo* b) { return a->name < b->name; };
    std::sort(fv.begin(), fv.end(), by_name);  // names are unique in a dataset
    for (const auto& rv : R.vars) {
        auto it = std::lower_bound(fv.begin(), fv.end(), &rv, by_name);
        if (it == fv.end() || (*it)->name != rv.name) {
            found.problems.push_back(F.path + ": has no variable " + rv.name);
            continue;
        }
        const VarInfo& v = **it;
        const bool agg = ref.aggregated_vars.count(rv.name) > 0;
        if (v.dims != rv.dims)
            found.problems.push_back(F.path + ": variable " + rv.name + " has other dimensions than in " + R.path);
        compare_type(R, F, rv, v, agg, found);
        for (const std::string_view name : attribute_names(rv.attributes, v.attributes))
            compare_attribute(R, F, rv, v, agg, std::string(name), found);
    }
    for (const auto& v : F.vars)
        if (std::none_of(R.vars.begin(), R.vars.end(), [&](const VarInfo& x) { return x.name == v.name; }))
            found.problems.push_back(F.path + ": has a variable " + v.name + " that " + R.path + " lacks");
}

}  // namespace

void compare_with_reference(const FileInfo& R, const FileInfo& F, const Reference& ref, Findings& found) {
    compare_dimensions(R, F, ref, found.problems);
    compare_variables(R, F, ref, found);
    for (const auto& ra : R.globals) {
        auto it = std::find_if(F.globals.begin(), F.globals.end(), [&](const Attribute& x) { return x.name == ra.name; });
        if (it == F.globals.end() || !same_attribute(&ra, &*it)) found.differing_globals.push_back(&ra.name);
    }
}

void compare_non_aggregated_values(const WriterState& st, const std::string& path, const Dataset& ds, Findings& found) {
    for (const auto& v : ds.variables) {
        if (st.aggregated_vars.count(v.name) || !v.source) continue;
        auto it = st.ref_values.find(v.name);
        if (it == st.ref_values.end() || v.source->element_count() > kCompareLimit) continue;
        const VarInfo* rv = nullptr;
        for (const auto& x : st.files[0].vars)
            if (x.name == v.name) rv = &x;
        if (!rv || rv->type != v.type) continue;  // reported with the metadata
        try {
            if (read_whole(*v.source) != it->second)
                found.problems.push_back(path + ": values of the non-aggregated variable " + v.name + " differ from " +
                                         st.files[0].path);
        } catch (const std::exception& e) {
            found.problems.push_back(e.what());
        }
    }
}

namespace {

// One warning per encoding attribute of var that is not the same in every file.
void report_encodings(const WriterState& st, const std::string& var,
                      const std::map<std::string, EncodingValues>& attrs, std::vector<std::string>& warnings) {
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
}

}  // namespace

// Per-file encodings (kerchunk #212/#586: the silent-wrong-data trap) are said loudly.
void report_metadata_differences(WriterState& st) {
    std::vector<std::string>& warnings = st.summary.warnings;
    for (const auto& [name, n] : st.global_differences)
        warnings.push_back("global attribute " + name + " differs in " + std::to_string(n) + " file(s); kept from " +
                           st.files[0].path);
    for (const auto& [var, attrs] : st.encodings) {
        report_encodings(st, var, attrs, warnings);
        if (attrs.count("scale_factor") || attrs.count("add_offset")) {
            st.unpack[var] = true;
            warnings.push_back(var + ": fragments are packed (scale_factor/add_offset); the aggregation variable is the "
                                     "unpacked data (CF-1.13 canonical form), without scale_factor/add_offset");
        }
    }
}

}  // namespace ncafs::agg::cf_write
