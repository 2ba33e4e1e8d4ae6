// Mapping between the ncafs dataset model and the ncstream schema: element
// types, attributes, escaped variable names (docs/formats/ncstream.md,
// "The profile we write" and "Ambiguities").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "codecs/dataset.hpp"
#include "codecs/ncstream/ncstream.pb.h"

namespace ncafs::ncstream {

// NC_BYTE->BYTE ... NC_INT64->LONG, NC_UINT64->ULONG (item 4 of the profile, docs/formats/ncstream.md).
pb::DataType to_pb_type(NcType t);
// The 4.x Attribute.Type of a type: CHAR -> STRING, unsigned -> the signed type.
pb::Attribute_Type to_old_attribute_type(NcType t);
// Element type of a fixed-size ncstream type; `unsigned_flag` (4.x
// Variable.unsigned / Attribute.unsigned) turns BYTE..LONG into the unsigned
// type. ENUM1/2/4 are read as their integer base. nullopt for STRING,
// STRUCTURE, SEQUENCE, OPAQUE.
std::optional<NcType> nc_type_from_pb(pb::DataType t, bool unsigned_flag);

// Fills a schema Attribute: both `type` and `dataType`, text as one sdata
// string (len = 1, trailing NULs dropped), numbers as big-endian `data`.
void encode_attribute(const Attribute& a, pb::Attribute* out);
// The inverse; applies netcdf-java 5.x's type decision rule. Throws
// FormatError(file, offset) for data that does not match len or a type that
// has no classic counterpart.
Attribute decode_attribute(const pb::Attribute& a, const std::string& file, uint64_t offset);

// netCDF text may be any bytes; protobuf strings must be UTF-8. Valid UTF-8
// passes unchanged; each byte of an invalid sequence is taken as Latin-1.
std::string to_valid_utf8(std::string_view bytes);

// Full-name escaping of one name component: '.' and '\' get a backslash.
std::string escape_name(std::string_view name);
std::string unescape_name(std::string_view name);

}  // namespace ncafs::ncstream
