// libFuzzer target for the NCA/CFA JSON parser (G1 nca_array, G2 cfa_array):
// the input is the JSON attribute of a scalar carrier variable over the
// dimensions time(6) lat(4) lon(3) of an in-memory dataset that also holds
// a private variable private_tas(lon, time, lat). Each input is
// parsed as both generations, the `part` grammar is run on it with both
// rules, and a parsed aggregate is handed to FragmentGrid (what reads use).
// Expected outcomes: an Aggregate, AggregationError, or (parse_part, whose
// contract says so) std::runtime_error; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "aggregation/model/error.hpp"
#include "aggregation/json/nca_parser.hpp"
#include "aggregation/model/fragment_grid.hpp"
#include "aggregation/read/path_policy.hpp"

namespace {

ncafs::Dataset dataset_with_carrier(const std::string& prefix, const std::string& json) {
    ncafs::Dataset d;
    d.origin = "/fuzz/aggregation.nc";
    d.dimensions = {{"time", 6}, {"lat", 4}, {"lon", 3}};
    ncafs::Variable carrier;
    carrier.name = "tas";
    carrier.type = ncafs::NcType::Float;
    carrier.attributes.push_back(ncafs::Attribute::text(prefix + "array", json));
    carrier.attributes.push_back(ncafs::Attribute::text(prefix + "dimensions", "time lat lon"));
    carrier.attributes.push_back(ncafs::Attribute::text("units", "K"));
    d.variables.push_back(std::move(carrier));
    // A private variable that partitions may name (fragments in the file itself).
    ncafs::Variable inner;
    inner.name = "private_tas";
    inner.type = ncafs::NcType::Float;
    inner.dimids = {2, 0, 1};
    inner.attributes.push_back(ncafs::Attribute::text("cf_role", "nca_private"));
    d.variables.push_back(std::move(inner));
    return d;
}

// Boxes whose end overflows uint64 are left to the partition grid's own
// checks (aggregation/model/fragment_grid.cpp), not fuzzed here.
bool boxes_fit(const ncafs::agg::Aggregate& a) {
    for (const auto& f : a.fragments)
        for (size_t d = 0; d < f.start.size() && d < f.count.size(); ++d)
            if (f.start[d] > UINT64_MAX - f.count[d]) return false;
    return true;
}

void parse_as(const std::string& prefix, const std::string& json, const ncafs::agg::PathPolicy& paths) {
    const ncafs::Dataset d = dataset_with_carrier(prefix, json);
    try {
        const ncafs::agg::Aggregate a = ncafs::agg::parse_nca_variable(d, d.variables[0], paths);
        if (boxes_fit(a)) ncafs::agg::FragmentGrid grid(a);
    } catch (const ncafs::agg::AggregationError&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Depth is bounded before parsing (json_too_deep_at: 256 levels);
    // 4 KiB inputs keep nlohmann's recursion far from the stack limit.
    if (size > 4096) return 0;
    static const ncafs::agg::PathPolicy paths("/fuzz/aggregation.nc", {}, {});
    const std::string text(reinterpret_cast<const char*>(data), size);
    parse_as("nca_", text, paths);
    parse_as("cfa_", text, paths);
    for (bool square_is_range : {false, true}) {
        try {
            (void)ncafs::agg::parse_part(text, square_is_range);
        } catch (const std::runtime_error&) {
        }
    }
    return 0;
}
