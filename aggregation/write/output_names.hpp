// Step 4 of `ncafs aggregate`: the output's names. The aggregated variables
// that share one list of dimensions share one signature (writer_state.hpp):
// a fragment map, its uris and fragment dimensions, named so as to clash
// with none of the reference's names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/write/writer_state.hpp"

namespace ncafs::agg::cf_write {

// Fills st.taken, st.agg_total, st.sigs, st.sig_of, st.fragment_dim and the map dimensions.
void plan_names(WriterState& st);

// Length of dimension d in the output: the sum of the blocks if aggregated.
uint64_t dim_len(const WriterState& st, const std::string& d);

// The widest URI of the picked files (char variables' string length).
size_t uri_width(const WriterState& st, const std::vector<size_t>& picks);

// base, or base_1, base_2, ... : the first not taken, then taken.
std::string unique_name(const std::string& base, std::set<std::string>& taken);

}  // namespace ncafs::agg::cf_write
