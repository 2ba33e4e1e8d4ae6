// The element types of the ds format and their mapping to netCDF types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "codecs/types.hpp"

namespace ncafs::ds {

enum class DsType { Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float32, Float64, Bool, Str, Unicode };

// ds-1.0 `.type` names: "int8" ... "float64", "bool", "str", "unicode".
std::optional<DsType> ds_type_from_name(std::string_view name);
// The experimental (ds-format 2.0.x) `.type` + `.dsize` pair ("float", 32).
std::optional<DsType> ds_type_from_experimental(std::string_view name, int64_t dsize);
std::string_view ds_type_name(DsType t);

bool is_string_type(DsType t);  // str, unicode
// Bytes per stored value of a number type; 0 for bool and strings.
size_t ds_number_width(DsType t);

// Reading: the netCDF type a ds variable becomes. bool -> byte (0/1);
// str/unicode -> char (with an extra string-length dimension).
NcType nc_type_for(DsType t);
// Writing: the ds type of a netCDF type. char -> str (one 1-byte string
// per character, as ds-format converts NC_CHAR arrays).
DsType ds_type_for(NcType t);

}  // namespace ncafs::ds
