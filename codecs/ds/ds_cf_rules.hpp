// netCDF4-python's default view of a variable's values (auto mask and scale,
// as in netCDF4 1.6.x Variable.__getitem__ / _toma with numpy 1.24's
// value-based casting), which is what `ds select in.nc out.ds` stores:
//  - masked where equal to missing_value or _FillValue (each only when
//    "safely castable" to the variable type, else ignored); without a usable
//    _FillValue, where equal to the type's default fill (also for bytes: a
//    classic file always reports fill mode on); outside valid_range, else
//    valid_min / valid_max (not for char);
//  - a true _Unsigned (1.6.2's truth value: any non-empty text or non-zero
//    number) reinterprets signed integers as unsigned (missing_value and
//    _FillValue are reinterpreted too, valid_* and the default fill are
//    compared by value; docs/formats/ds.md "The _Unsigned choice");
//  - scale_factor / add_offset applied when they are single numbers, with
//    numpy's result types (int16 * float32 -> float32, int32 * float32 ->
//    float64, sf == 1 and ao == 0 -> cast to the type of scale_factor).
// Unknowable from a Dataset: a netCDF-4 variable with fill mode off
// (nc_def_var_fill NC_NOFILL) is not masked at the default fill for bytes by
// netCDF4-python; we mask it, as for every classic file.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "codecs/dataset.hpp"

namespace ncafs::ds {

// One value of a netCDF type, native byte order.
struct TypedValue {
    NcType type = NcType::Double;
    std::array<uint8_t, 8> bytes{};
};

struct CfRules {
    NcType stored = NcType::Double;  // the variable's type
    NcType viewed = NcType::Double;  // after the _Unsigned reinterpretation
    bool is_char = false;

    // Mask criteria, all in the `viewed` type.
    std::vector<TypedValue> missing_values;  // usable missing_value elements (non-NaN)
    bool missing_nan = false;                // a missing_value is NaN: mask NaNs
    std::optional<TypedValue> fill;          // usable _FillValue (non-NaN)
    bool fill_nan = false;                   // _FillValue is NaN: mask NaNs
    // Without a usable _FillValue: the default fill of `stored`, compared by
    // value with the viewed data (never equal after an unsigned view).
    std::optional<long double> default_fill;
    std::optional<long double> valid_min, valid_max;

    enum class Scale { None, Cast, Multiply, Add, MultiplyAdd } scale = Scale::None;
    TypedValue scale_factor, add_offset;
    NcType after_multiply = NcType::Double;  // numpy's type of data * scale_factor (or of the cast)
    NcType out = NcType::Double;             // the result type
};

CfRules cf_rules_for(const Variable& variable);

// For n elements of `rules.stored` at `in` (native order): missing[i] = 1
// where masked; out receives n values of `rules.out` (native order; masked
// entries hold whatever the arithmetic gave).
void apply_cf_rules(const CfRules& rules, const void* in, size_t n, uint8_t* missing, void* out);

// numpy 1.24 value-based promotion of an array of type `array` with a numpy
// scalar of type `scalar` and value `value` (exposed for tests).
NcType numpy_scalar_promotion(NcType array, const TypedValue& scalar);

}  // namespace ncafs::ds
