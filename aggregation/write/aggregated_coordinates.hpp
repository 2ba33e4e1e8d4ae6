// Each input's length along the aggregated dimensions and its coordinate
// values there, converted to the reference file's units and calendar (what
// fragment_placement.hpp orders the fragments by).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/write/writer_state.hpp"

namespace ncafs::agg::cf_write {

// One file's length along an aggregated dimension and its coordinate values, as read.
struct DimRead {
    bool missing = false;  // the file has no such dimension
    uint64_t length = 0;
    bool has_coordinate = false;
    std::string error;           // why the coordinate could not be read
    std::vector<double> values;  // in the file's own units
    std::string units, calendar;
};

// ds along each of st.agg_dims, read (by a reader thread: st is read only).
std::vector<DimRead> read_aggregated_dims(const WriterState& st, const Dataset& ds);

// File fi's agg_len and coords from what was read, in the reference's units
// (file 0 sets them); what cannot be used is a problem.
void place_coordinates(WriterState& st, size_t fi, std::vector<DimRead>& dims);

}  // namespace ncafs::agg::cf_write
