// libFuzzer target for the CF-style aggregation reader (G3 CFA-0.6.x, G4
// drafts, G5 CF-1.13): the input is a netCDF classic (CDF-1/2/5) aggregation
// file. As when ncafs opens one, its header is read by our CDF reader and,
// when a variable carries aggregated_dimensions + aggregated_data, the term
// variables are read by netcdf-c from the file's bytes (TermFile opens them
// with nc_open_mem); each parsed aggregate is handed to FragmentGrid.
// Expected outcomes: aggregates, or FormatError / SourceError /
// AggregationError; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "aggregation/model/error.hpp"
#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/model/fragment_grid.hpp"
#include "aggregation/read/path_policy.hpp"
#include "codecs/error.hpp"
#include "codecs/open_dataset.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// Boxes whose end overflows uint64 are left to the partition grid's own
// checks (aggregation/model/fragment_grid.cpp), not fuzzed here.
bool boxes_fit(const ncafs::agg::Aggregate& a) {
    for (const auto& f : a.fragments)
        for (size_t d = 0; d < f.start.size() && d < f.count.size(); ++d)
            if (f.start[d] > UINT64_MAX - f.count[d]) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Classic files only: other bytes would go to netcdf-c's HDF5 reader,
    // which is not ours to fuzz. 64 KiB is plenty for term variables.
    if (size < 4 || size > (64 << 10) || std::memcmp(data, "CDF", 3) != 0) return 0;
    static ncafs::fuzz::MemoryFile file;
    const std::string& path = file.hold(data, size);
    static const ncafs::agg::PathPolicy paths(path, {}, {});
    try {
        const ncafs::Dataset d = ncafs::open_dataset(path);
        bool any = false;
        for (const auto& v : d.variables) any |= ncafs::agg::is_cf_aggregation_variable(v);
        if (!any) return 0;
        for (const auto& a : ncafs::agg::parse_cf_file(path, d, paths).aggregates)
            if (boxes_fit(a.aggregate)) ncafs::agg::FragmentGrid grid(a.aggregate);
    } catch (const ncafs::FormatError&) {
    } catch (const ncafs::SourceError&) {
    } catch (const ncafs::agg::AggregationError&) {
    }
    return 0;
}
