// Step 5 of `ncafs aggregate`, what is written: the CF-1.13 aggregation file
// described for the gateway (netcdf::OutputFile, codecs/netcdf/netcdf_writer.hpp):
// the reference's dimensions, global attributes and non-aggregated variables; each
// aggregated variable a scalar with aggregated_dimensions, aggregated_data
// and its identifiers; each signature's fragment map and uris.
#pragma once

#include <vector>

#include "aggregation/write/writer_state.hpp"
#include "codecs/netcdf/netcdf_writer.hpp"

namespace ncafs::agg::cf_write {

// lead_vars: the variables of the first fragment in aggregation order, whose
// attributes the aggregation variables take. Names the identifiers (st.taken
// grows) and counts the variables in st.summary. The description points into
// st (non-aggregated values, URIs): it is written while st lives.
netcdf::OutputFile describe_output(WriterState& st, const std::vector<VarInfo>& lead_vars);

}  // namespace ncafs::agg::cf_write
