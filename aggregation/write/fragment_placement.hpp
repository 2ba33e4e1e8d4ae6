// Step 3 of `ncafs aggregate`: the fragments placed in the master array.
// Along each aggregated dimension the files are ordered by their first
// coordinate value (files starting at the same value share a block), then
// the blocks must tile a hyperrectangle, every cell covered by one file.
#pragma once

#include "aggregation/write/writer_state.hpp"

namespace ncafs::agg::cf_write {

// Fills each file's position, st.block_len, st.nf and st.grid; throws
// AggregateInputError when the files overlap, leave gaps or disagree.
void place_fragments(WriterState& st);

}  // namespace ncafs::agg::cf_write
