// The `zarr.json` documents of the `.zarr` view in Zarr v3 (zarr_format=3):
// the group's (its attributes) and each array's (shape, data_type, the
// regular chunk grid, chunk key encoding `default` with "/", the `bytes`
// codec in the chunks' byte order and, for chunks passed through, the
// numcodecs shuffle and zlib codecs; fill_value, dimension_names, attributes).
#pragma once

#include <string>
#include <vector>

#include "aggregation/zarr_view/zarr_grid.hpp"
#include "codecs/dataset.hpp"
#include "codecs/deflated_chunks.hpp"

namespace ncafs::agg::zarr_view {

// The zlib level a passed-through array's codec names: the file's level is
// not surveyed, and a reader never needs it (a zlib stream decodes without it).
inline constexpr int kStoredZlibLevel = 1;

// attributes: the attributes as a JSON object's text.
std::string v3_group_json(const std::string& attributes);

// The v3 data_type of a netCDF type (char as uint8: v3 has no character type).
std::string v3_data_type(NcType type);

// fill_native: one element of v.type, native order (the variable's
// _FillValue, else its type's default fill: every v3 array has one).
// stored: the file's chunks passed through (after `bytes`, the
// `numcodecs.shuffle` and `numcodecs.zlib` codecs they were encoded with), or null.
std::string v3_array_json(const Variable& v, const std::vector<std::string>& dimensions, const ZarrGrid& grid,
                          bool big_endian, const std::vector<uint8_t>& fill_native, const std::string& attributes,
                          const DeflatedChunks* stored = nullptr);

}  // namespace ncafs::agg::zarr_view
