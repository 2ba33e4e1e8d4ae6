#include "aggregation/write/aggregated_coordinates.hpp"

#include "aggregation/write/compared_values.hpp"

namespace ncafs::agg::cf_write {

namespace {

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
        auto raw = read_whole(*c->source);
        r.values.reserve(r.length);
        for (uint64_t k = 0; k < r.length; ++k) r.values.push_back(element_as_double(c->type, raw.data(), k));
        r.units = attribute_text(c->find_attribute("units")), r.calendar = attribute_text(c->find_attribute("calendar"));
    } catch (const std::exception& e) {
        r.error = e.what();
        r.values.clear();
    }
    return r;
}

// values (file fi's, along aggregated dim d, in r's units) in the reference's;
// one converter per dim, units and calendar. Throws when they do not convert.
void to_reference_units(WriterState& st, size_t fi, size_t d, const DimRead& r, std::vector<double>& values) {
    if (fi == 0) st.coord_units[d] = r.units, st.coord_calendar[d] = r.calendar;
    auto key = std::make_tuple(d, r.units, r.calendar);
    auto it = st.converters.find(key);
    if (it == st.converters.end())
        it = st.converters
                 .emplace(key, units_converter(r.units, r.calendar.empty() ? st.coord_calendar[d] : r.calendar,
                                               st.coord_units[d], st.coord_calendar[d]))
                 .first;
    for (double& x : values) x = it->second.scale * x + it->second.offset;
}

}  // namespace

std::vector<DimRead> read_aggregated_dims(const WriterState& st, const Dataset& ds) {
    std::vector<DimRead> dims;
    dims.reserve(st.agg_dims.size());
    for (const auto& d : st.agg_dims) dims.push_back(read_aggregated_dim(ds, d));
    return dims;
}

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
                to_reference_units(st, fi, d, r, values);
            } catch (const std::exception& e) {
                unusable(e.what());
            }
        }
        F.coords.push_back(std::move(values));
    }
}

}  // namespace ncafs::agg::cf_write
