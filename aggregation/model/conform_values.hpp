// Missing-value tests and value conversion of one partition variable's raw
// values into the master type. Integer partitions are tested in their own
// integer domain: _FillValue, missing_value and valid_min/max/range compare
// exactly, also for int64/uint64 values that double cannot tell apart, and an
// integer to integer conversion with no scale, offset or units change never
// passes through double (out-of-range values become the master fill).
// Floating partitions, unpacking and units changes go through double, as
// netCDF4-python and NCO do.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "aggregation/model/aggregate.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg {

// Holds every int8..int64 and uint8..uint64 value exactly.
__extension__ typedef __int128 WideInt;

struct MissingRules {
    NcType type = NcType::Double;  // the partition's type: decides the domain
    // Floating partitions: values compared as double (NaN matches NaN).
    std::vector<double> values;
    std::optional<double> min, max;
    // Integer partitions: exact values and inclusive bounds.
    std::vector<WideInt> exact;
    std::optional<WideInt> exact_min, exact_max;

    bool empty() const { return values.empty() && exact.empty() && !has_range(); }
    bool has_range() const { return min || max || exact_min || exact_max; }
    // True when the element (native order, of `type`) is missing.
    bool masks(const uint8_t* element) const;
};

// _FillValue (else the type's default fill), missing_value, valid_min,
// valid_max and valid_range of variable v, stored as type `type`. None for text.
MissingRules missing_rules(const Variable& v, NcType type);

// False when masking cannot change a value: the master has the partition's
// type, no valid range applies and every missing value is the master fill.
bool masking_changes_values(const MissingRules& rules, NcType master, const uint8_t* master_fill);

// Converts n raw partition elements to the master type: masked elements (when
// `mask`) and values out of the master's range become master_fill; others
// map through `value` (identity: exactly, without double for integers).
void conform_elements(const MissingRules& rules, bool mask, const Affine& value, NcType from, const uint8_t* src,
                      NcType to, uint8_t* dst, uint64_t n, const uint8_t* master_fill);

}  // namespace ncafs::agg
