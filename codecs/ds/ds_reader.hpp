// Reading ds files (ds-1.0, and the experimental layout of ds-format 2.0.x:
// no version line, `.type` float/int/uint/... with `.dsize`) as a Dataset.
//
// Mapping to the netCDF model:
//  - ds types to netCDF types: int8..uint64, float32/64 as themselves
//    (uint*, int64 are CDF-5 types); bool -> byte 0/1; str and unicode ->
//    char arrays with an extra last dimension "<var>_strlen" (a "_" is
//    appended until the name is unused), as long as the longest string
//    (at least 1), strings NUL-padded.
//  - dimensions: the names in .dims with the lengths in .size; all uses of
//    a name must agree; no unlimited dimension. Variables described without
//    data (no .offset/.len/.type/.size) are skipped, as ds-format does.
//  - masked elements read as the variable's _FillValue; when the variable
//    has a mask and no _FillValue, one is added: the netCDF default fill of
//    its type. An empty variable (.size null) becomes a scalar holding the
//    fill value (ds-format writes a masked scalar that way).
//  - attributes by the rule of ds_attributes.hpp (json_to_attribute);
//    _FillValue is converted to the variable's type (netCDF requires it)
//    and dropped when it does not fit exactly.
// Every offset, length and size is checked against the file before use;
// violations throw FormatError naming the file, byte offset and variable.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "codecs/dataset.hpp"
#include "io/open_file.hpp"

namespace ncafs::ds {

// True when the first bytes look like a ds file: "ds-1.0\n" (also any
// "ds-" version line, so that unsupported versions are reported), or the
// experimental layout's header, "{" then optional blanks then '"' or '}'.
bool has_ds_signature(std::span<const uint8_t> first_bytes);

Dataset open_ds_dataset(const std::string& path);
// The same for a file already opened (confined, regular).
Dataset open_ds_dataset(std::shared_ptr<const OpenFile> file);

}  // namespace ncafs::ds
