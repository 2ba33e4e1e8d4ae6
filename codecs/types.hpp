// The eleven netCDF external types (CDF-1/2/5 spec, "nc_type"): sizes, names,
// default fill values, big-endian encoding and value conversion.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ncafs {

// Values are the type tags of the CDF header (and netcdf-c's NC_* constants).
enum class NcType : int32_t {
    Byte = 1,
    Char = 2,
    Short = 3,
    Int = 4,
    Float = 5,
    Double = 6,
    UByte = 7,
    UShort = 8,
    UInt = 9,
    Int64 = 10,
    UInt64 = 11,
};

// Dimensions of one variable at most (netCDF's NC_MAX_VAR_DIMS): a file
// declaring more is refused before its shape is built.
inline constexpr size_t kMaxVariableRank = 1024;

inline constexpr std::array<NcType, 11> kAllTypes = {
    NcType::Byte,  NcType::Char,   NcType::Short, NcType::Int,   NcType::Float, NcType::Double,
    NcType::UByte, NcType::UShort, NcType::UInt,  NcType::Int64, NcType::UInt64};

// True for a tag 1..11.
bool is_valid_type_tag(int64_t tag);
// Bytes per element (extsize of the spec).
size_t type_size(NcType t);
// CDL name: "byte", "char", "short", "int", "float", "double", "ubyte", ...
std::string_view type_name(NcType t);
// Inverse of type_name; also accepts netcdf-c/CDL aliases ("int32", "real", "float32", ...).
std::optional<NcType> type_from_name(std::string_view name);
// Types that exist only in CDF-5 (and netCDF-4).
bool is_cdf5_only(NcType t);
bool is_integer_type(NcType t);   // Char is not an integer type
bool is_unsigned_type(NcType t);

// The default fill value of a type, exactly the bytes of the spec (big-endian),
// in the first type_size(t) bytes.
std::span<const uint8_t> default_fill_big_endian(NcType t);
// The default fill as a double (for Int64/UInt64 the nearest double).
double default_fill_as_double(NcType t);

// Byte order conversion between native and big-endian, in place, for n elements
// of type t (a no-op on big-endian hosts and for 1-byte types).
void swap_to_big_endian(NcType t, void* data, size_t n);
inline void swap_from_big_endian(NcType t, void* data, size_t n) { swap_to_big_endian(t, data, n); }
// The same while copying n elements from src to dst (the same, or not
// overlapping): one pass instead of a copy and a swap.
void copy_swapped_to_big_endian(NcType t, const void* src, void* dst, size_t n);
inline void copy_swapped_from_big_endian(NcType t, const void* src, void* dst, size_t n) {
    copy_swapped_to_big_endian(t, src, dst, n);
}

// Fill n elements at dst (native byte order) with the given single element.
void fill_elements(void* dst, const void* element, size_t element_size, size_t n);

// Reads element i of a native-order array of type t as a double / int64.
double element_as_double(NcType t, const void* data, size_t i);

// How out-of-range values are treated when converting to an integer type.
// Chosen policy (documented in docs/views.md, "VDS views"): NaN and values outside the target
// range become the target's fill value (like netcdf-c's NC_ERANGE case, but
// never silently wrapped); in-range floating values are rounded to nearest,
// ties away from zero (std::llround), as NCO and numpy.rint users expect for
// unpacked-then-repacked data.
enum class RangePolicy { FillOnOverflow };

// Converts n native-order elements from type `from` to type `to`.
// Returns the number of elements that were out of range (and were replaced
// by `to`'s fill value, or `out_of_range_fill` when given).
size_t convert_elements(NcType from, const void* src, NcType to, void* dst, size_t n,
                        const void* out_of_range_fill = nullptr);

// Converts a double to one element of type `to` under the range policy;
// returns false if out of range (dst then holds the fill).
bool double_to_element(double v, NcType to, void* dst, const void* out_of_range_fill = nullptr);

}  // namespace ncafs
