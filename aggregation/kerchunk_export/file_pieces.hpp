// The piece for one variable of one opened file (a partition, or the file of
// a single-file dataset exported whole): classic -> runs; netCDF-4 -> its
// HDF5 chunks (or one run when contiguous); anything else, or storage Zarr
// cannot describe, -> inline with the reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aggregation/kerchunk_export/classic_ranges.hpp"
#include "aggregation/kerchunk_export/piece.hpp"
#include "codecs/dataset.hpp"

namespace ncafs {
class OpenFile;
}

namespace ncafs::agg::kerchunk {

struct FileVariable {
    std::shared_ptr<const OpenFile> file;
    std::shared_ptr<const Dataset> dataset;  // holds v
    const Variable* variable = nullptr;
    std::string group;  // netCDF-4 group ("/a/b"), empty: root
    SourceFn source_again;  // the variable's source, opened again when needed (classic runs)
    // Master dimension of each of the variable's axes (-1: a size-1 axis the
    // master lacks), in increasing order; empty: the same axes.
    std::vector<int> axis_to_master;
};

// v's values placed at box [start, start + count) of the master; their
// shape equals count but for size-1 axes (the caller has checked). label
// names it in messages.
Piece file_piece(const FileVariable& fv, std::vector<uint64_t> start, std::vector<uint64_t> count, std::string label,
                 uint64_t max_chunks);

// The name a reference gives a file: a remote URL as it is, a local path
// absolute and lexically normal.
std::string reference_url(const OpenFile& file);

}  // namespace ncafs::agg::kerchunk
