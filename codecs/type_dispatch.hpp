// Dispatch from a runtime NcType to the C++ type that stores its elements.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "codecs/types.hpp"

namespace ncafs {

// Calls f(T{}) with the C++ type that stores elements of t and returns its
// result. CharAs is the type used for NcType::Char: `char` by default; callers
// doing arithmetic on char elements (ds CF rules, numpy-like) pass uint8_t so
// that bytes above 127 stay positive. Throws std::invalid_argument on a tag
// outside the 11 netCDF types.
template <typename CharAs = char, typename F>
decltype(auto) visit_type(NcType t, F&& f) {
    switch (t) {
        case NcType::Byte: return f(int8_t{});
        case NcType::Char: return f(CharAs{});
        case NcType::Short: return f(int16_t{});
        case NcType::Int: return f(int32_t{});
        case NcType::Float: return f(float{});
        case NcType::Double: return f(double{});
        case NcType::UByte: return f(uint8_t{});
        case NcType::UShort: return f(uint16_t{});
        case NcType::UInt: return f(uint32_t{});
        case NcType::Int64: return f(int64_t{});
        case NcType::UInt64: return f(uint64_t{});
    }
    throw std::invalid_argument("invalid netCDF type tag " + std::to_string(static_cast<int32_t>(t)));
}

}  // namespace ncafs
