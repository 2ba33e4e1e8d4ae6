// JSON text as the ds reference implementation (Python's json module) writes
// and reads it: json.dumps formatting for the header, and a parser that also
// accepts Python's bare NaN / Infinity / -Infinity tokens (not standard JSON,
// rejected by nlohmann_json) that json.dumps emits for non-finite floats.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ncafs::ds {

using Json = nlohmann::ordered_json;  // keeps key order: the header's order matters

// json.dumps(value) with default arguments: separators ", " and ": ",
// ensure_ascii (everything outside 0x20..0x7E as \uXXXX, lowercase hex,
// surrogate pairs), floats as repr(), non-finite as NaN/Infinity/-Infinity.
// Strings are UTF-8; an invalid byte becomes U+FFFD (our reading of
// Python's errors="replace", which netCDF4-python uses for attribute text).
std::string python_json_dumps(const Json& value);

// repr() of a Python float: shortest round-trip digits, fixed notation when
// the decimal exponent is in [-4, 16), else d.ddde+XX.
std::string python_float_repr(double value);

// Parses one JSON text, accepting bare NaN, Infinity and -Infinity outside
// strings. Throws JsonSyntaxError with the byte position in `text`.
Json parse_python_json(std::string_view text);

struct JsonSyntaxError {
    size_t position;
    std::string reason;
};

}  // namespace ncafs::ds
