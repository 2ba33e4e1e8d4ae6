// `ncafs export --format kerchunk`: the reference set (kerchunk JSON,
// version 1) of the dataset a `.nc` view shows: `.zgroup`, the global
// `.zattrs`, and every variable's metadata and chunks (variable_refs.hpp).
// docs/kerchunk.md, "Export".
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "aggregation/kerchunk_export/variable_refs.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg::kerchunk {

struct ExportResult {
    std::vector<std::string> notes;  // one line each, for standard error
    size_t variables_written = 0, variables_left_out = 0;
};

// Writes {"version": 1, "refs": {...}} to sink as it is made (memory: one
// variable's pieces and one chunk at a time, whatever the number of chunks).
ExportResult kerchunk_references(const Dataset& ds, const DatasetOrigin& origin, const ExportOptions& options,
                                 const RefsWriter::Sink& sink);

}  // namespace ncafs::agg::kerchunk
