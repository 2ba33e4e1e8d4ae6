// The Zarr v2 metadata objects of a reference set, as the JSON text a
// reference holds: `.zgroup`, `.zattrs` (global or a variable's, with
// `_ARRAY_DIMENSIONS` for xarray), `VAR/.zarray`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aggregation/kerchunk_export/chunk_grid.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg::kerchunk {

// JSON text; invalid UTF-8 in names or text attributes replaced (U+FFFD).
std::string json_text(const nlohmann::json& j);
// Appends json_text(s) of a string to out; printable ASCII without a quote
// or backslash (every chunk key, most paths) is copied as it is.
void append_json_string(std::string& out, const std::string& s);

std::string zgroup_text();

// attributes (without _FillValue, which the array's fill_value carries)
// and, for a variable, its dimension names.
std::string zattrs_text(const std::vector<Attribute>& attributes, const std::vector<std::string>* dimensions);

// fill: the fill_value (null when the array has none); compressor: null, or a codec_json.
std::string zarray_text(const std::vector<uint64_t>& shape, const ChunkGrid& grid, NcType type,
                        const nlohmann::json& fill, const nlohmann::json& compressor = nullptr);

}  // namespace ncafs::agg::kerchunk
