// Byte ranges of values stored as they are, without chunks or filters: a
// netCDF classic variable (a fixed variable is one run; a record variable
// one run per record, records a record size apart: the source knows the
// layout) and a contiguous HDF5 dataset (one run from its address).
#pragma once

#include <functional>
#include <memory>

#include "aggregation/kerchunk_export/piece.hpp"
#include "codecs/array_source.hpp"

namespace ncafs::agg::kerchunk {

// Gives the classic variable's source, opened again if need be: a run
// holds no file open between calls (the dataset cache bounds open files).
using SourceFn = std::function<std::shared_ptr<const ArraySource>()>;

// Runs of a classic variable's source (ArraySource::big_endian_extents),
// neighbouring extents merged; nullopt when a run is split or lies beyond
// the end of its file.
RunFn classic_runs(SourceFn source);

// Runs of a contiguous dataset of element_size-byte elements at address.
RunFn contiguous_runs(uint64_t address, uint64_t element_size);

}  // namespace ncafs::agg::kerchunk
