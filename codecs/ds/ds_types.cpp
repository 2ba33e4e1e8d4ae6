#include "codecs/ds/ds_types.hpp"

#include <array>
#include <utility>

namespace ncafs::ds {

namespace {

constexpr std::array<std::pair<DsType, std::string_view>, 13> kNames = {{
    {DsType::Int8, "int8"},
    {DsType::Int16, "int16"},
    {DsType::Int32, "int32"},
    {DsType::Int64, "int64"},
    {DsType::UInt8, "uint8"},
    {DsType::UInt16, "uint16"},
    {DsType::UInt32, "uint32"},
    {DsType::UInt64, "uint64"},
    {DsType::Float32, "float32"},
    {DsType::Float64, "float64"},
    {DsType::Bool, "bool"},
    {DsType::Str, "str"},
    {DsType::Unicode, "unicode"},
}};

}  // namespace

std::optional<DsType> ds_type_from_name(std::string_view name) {
    for (const auto& [t, n] : kNames)
        if (n == name) return t;
    return std::nullopt;
}

std::optional<DsType> ds_type_from_experimental(std::string_view name, int64_t dsize) {
    if (name == "bool") return dsize == 1 ? std::optional(DsType::Bool) : std::nullopt;
    if (name == "str") return dsize == 8 ? std::optional(DsType::Str) : std::nullopt;
    if (name == "unicode") return dsize == 8 ? std::optional(DsType::Unicode) : std::nullopt;
    if (name == "float") {
        if (dsize == 32) return DsType::Float32;
        if (dsize == 64) return DsType::Float64;
        return std::nullopt;
    }
    const bool is_int = name == "int", is_uint = name == "uint";
    if (!is_int && !is_uint) return std::nullopt;
    switch (dsize) {
        case 8: return is_int ? DsType::Int8 : DsType::UInt8;
        case 16: return is_int ? DsType::Int16 : DsType::UInt16;
        case 32: return is_int ? DsType::Int32 : DsType::UInt32;
        case 64: return is_int ? DsType::Int64 : DsType::UInt64;
        default: return std::nullopt;
    }
}

std::string_view ds_type_name(DsType t) {
    for (const auto& [tt, n] : kNames)
        if (tt == t) return n;
    return "?";
}

bool is_string_type(DsType t) { return t == DsType::Str || t == DsType::Unicode; }

size_t ds_number_width(DsType t) {
    switch (t) {
        case DsType::Int8:
        case DsType::UInt8: return 1;
        case DsType::Int16:
        case DsType::UInt16: return 2;
        case DsType::Int32:
        case DsType::UInt32:
        case DsType::Float32: return 4;
        case DsType::Int64:
        case DsType::UInt64:
        case DsType::Float64: return 8;
        default: return 0;
    }
}

NcType nc_type_for(DsType t) {
    switch (t) {
        case DsType::Int8: return NcType::Byte;
        case DsType::Int16: return NcType::Short;
        case DsType::Int32: return NcType::Int;
        case DsType::Int64: return NcType::Int64;
        case DsType::UInt8: return NcType::UByte;
        case DsType::UInt16: return NcType::UShort;
        case DsType::UInt32: return NcType::UInt;
        case DsType::UInt64: return NcType::UInt64;
        case DsType::Float32: return NcType::Float;
        case DsType::Float64: return NcType::Double;
        case DsType::Bool: return NcType::Byte;
        case DsType::Str:
        case DsType::Unicode: return NcType::Char;
    }
    return NcType::Byte;
}

DsType ds_type_for(NcType t) {
    switch (t) {
        case NcType::Byte: return DsType::Int8;
        case NcType::Char: return DsType::Str;
        case NcType::Short: return DsType::Int16;
        case NcType::Int: return DsType::Int32;
        case NcType::Float: return DsType::Float32;
        case NcType::Double: return DsType::Float64;
        case NcType::UByte: return DsType::UInt8;
        case NcType::UShort: return DsType::UInt16;
        case NcType::UInt: return DsType::UInt32;
        case NcType::Int64: return DsType::Int64;
        case NcType::UInt64: return DsType::UInt64;
    }
    return DsType::Int8;
}

}  // namespace ncafs::ds
