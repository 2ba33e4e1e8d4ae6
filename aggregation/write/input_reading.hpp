// Step 1 of `ncafs aggregate`: every input's header, its coordinates along
// the aggregated dimensions and its URI; file 0 is the reference, which
// decides the aggregated dimension (its unlimited one unless --dim names
// them) and the aggregated variables, and whose small non-aggregated values the
// others must equal. The others are read by a few threads, compared with
// the reference (input_comparison.hpp) and merged in input order.
#pragma once

#include <string>
#include <vector>

#include "aggregation/write/writer_state.hpp"

namespace ncafs::agg::cf_write {

// Fills st.files, st.file_uris and the reference's members (writer_state.hpp);
// throws AggregateInputError with every problem found, UsageError when the
// output is an input or the aggregated dimension cannot be decided.
void read_inputs(WriterState& st, const std::vector<std::string>& files_in);

// The variables of the file at path, read again (of the files but the reference only paths are kept).
std::vector<VarInfo> read_variables(const std::string& path);

}  // namespace ncafs::agg::cf_write
