// A chunk stored inline: the view's own values of the chunk's box (read
// from the variable's source, converted to the variable's type as the view
// converts them), padded to the whole chunk with the fill value, in the
// grid's byte order, encoded by the grid's filters, as "base64:..." text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/kerchunk_export/chunk_grid.hpp"
#include "codecs/array_source.hpp"

namespace ncafs::agg::kerchunk {

// box: the chunk inside the master (clipped at its edge); pad: one element
// of `type`, native order.
std::string inline_chunk(const ArraySource& source, NcType type, const Box& box, const ChunkGrid& grid,
                         const std::vector<uint8_t>& pad);

}  // namespace ncafs::agg::kerchunk
