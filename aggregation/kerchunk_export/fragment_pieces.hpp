// The pieces of a master array, one per fragment (index = fragment index):
// a byte-copy fragment (its variable's bytes as they are) -> its file's piece; a
// fragment the view converts -> inline, with what the conversion is; a
// fragment of the aggregation file itself, constant or missing -> inline or
// fill without any flag. A fragment that cannot be opened (absent, outside
// the allowed roots, damaged) gives a piece that cannot be written at all.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "aggregation/kerchunk_export/piece.hpp"
#include "aggregation/read/aggregated_source.hpp"

namespace ncafs::agg::kerchunk {

struct FragmentPieces {
    std::vector<std::optional<Piece>> pieces;  // nullopt: constant or missing (values from the metadata)
    std::optional<std::string> unreadable;      // the first fragment that cannot be read, and why
};

FragmentPieces fragment_pieces(const AggregatedSource& source, uint64_t max_chunks);

}  // namespace ncafs::agg::kerchunk
