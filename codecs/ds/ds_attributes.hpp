// netCDF attributes <-> ds header JSON values.
#pragma once

#include <optional>
#include <string>

#include "codecs/dataset.hpp"
#include "codecs/ds/ds_json.hpp"

namespace ncafs::ds {

// As ds-format stores a netCDF attribute (netCDF4-python getncattr, then
// json.dumps): text -> string with NUL characters removed; one number -> a
// JSON number (integers exact; float32 widened to double, so 0.1f is
// 0.10000000149011612); several numbers -> a list; no numbers -> [].
Json attribute_to_json(const Attribute& attribute);

// Reading a ds header: the netCDF attribute for a JSON value. The rule:
//   string                      -> char (UTF-8 bytes)
//   true/false                  -> byte 1/0
//   integer(s)                  -> int if all fit in int32, else int64 if all
//                                  fit, else uint64 (when all are >= 0),
//                                  else double
//   number(s) with a fraction,
//   exponent, NaN or Infinity   -> double
//   [] (empty list)             -> char ""
//   null                        -> no attribute (nullopt)
//   anything else (objects, lists of strings, nested or mixed lists)
//                               -> char holding the value's JSON text
std::optional<Attribute> json_to_attribute(const std::string& name, const Json& value);

}  // namespace ncafs::ds
