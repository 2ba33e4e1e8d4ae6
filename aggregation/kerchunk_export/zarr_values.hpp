// The Zarr v2 spellings of netCDF values: one element as a `fill_value`
// ("NaN", "Infinity", base64 text for char), attributes as JSON values. The
// dtype strings are codecs/zarr/zarr_dtype.hpp's, shared with the reader.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "codecs/dataset.hpp"
#include "codecs/types.hpp"

namespace ncafs::agg::kerchunk {

// One element of t (native order) as a Zarr v2 fill_value.
nlohmann::json zarr_fill_value(NcType t, const uint8_t* element);

// An attribute's values as JSON: char -> text (trailing NULs dropped), one
// number -> a number, several -> a list; NaN and infinities as the strings
// "NaN", "Infinity", "-Infinity" (JSON has no literal for them).
nlohmann::json attribute_json(const Attribute& a);

}  // namespace ncafs::agg::kerchunk
