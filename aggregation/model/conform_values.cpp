#include "aggregation/model/conform_values.hpp"

#include <cmath>
#include <cstring>

#include "codecs/type_dispatch.hpp"

namespace ncafs::agg {

namespace {

WideInt element_as_wide(NcType t, const uint8_t* p) {
    return visit_type<uint8_t>(t, [&](auto v) -> WideInt {
        using T = decltype(v);
        if constexpr (std::is_floating_point_v<T>) {
            return 0;  // never called for floating types
        } else {
            T x;
            std::memcpy(&x, p, sizeof(T));
            return static_cast<WideInt>(x);
        }
    });
}

// Beyond every 64-bit value: a bound of +-inf clamps to these.
constexpr WideInt kBeyond = static_cast<WideInt>(1) << 65;

WideInt clamp_to_wide(long double d) {
    if (d >= static_cast<long double>(kBeyond)) return kBeyond;
    if (d <= -static_cast<long double>(kBeyond)) return -kBeyond;
    return static_cast<WideInt>(d);
}

// Value i of attribute a as an exact integer: integer attributes exactly;
// floating ones only when integral (a fractional missing value matches no integer).
std::optional<WideInt> exact_value(const Attribute& a, size_t i) {
    if (is_integer_type(a.type)) return element_as_wide(a.type, a.values.data() + i * type_size(a.type));
    long double d = static_cast<long double>(a.as_double(i));
    if (!std::isfinite(d) || std::floor(d) != d) return std::nullopt;
    return clamp_to_wide(d);
}

// Integer v is below floating bound d iff v < ceil(d); above iff v > floor(d).
std::optional<WideInt> exact_bound(const Attribute& a, size_t i, bool lower) {
    if (is_integer_type(a.type)) return element_as_wide(a.type, a.values.data() + i * type_size(a.type));
    long double d = static_cast<long double>(a.as_double(i));
    if (std::isnan(d)) return std::nullopt;
    return clamp_to_wide(lower ? std::ceil(d) : std::floor(d));
}

const Attribute* numeric_attribute(const Variable& v, const char* name) {
    const Attribute* a = v.find_attribute(name);
    return a && a->type != NcType::Char && a->length() > 0 ? a : nullptr;
}

void add_integer_rules(MissingRules& r, const Variable& v) {
    if (const Attribute* f = numeric_attribute(v, "_FillValue")) {
        if (auto x = exact_value(*f, 0)) r.exact.push_back(*x);
    } else {
        std::vector<uint8_t> fill(default_fill_big_endian(r.type).begin(), default_fill_big_endian(r.type).end());
        swap_from_big_endian(r.type, fill.data(), 1);
        r.exact.push_back(element_as_wide(r.type, fill.data()));
    }
    if (const Attribute* m = numeric_attribute(v, "missing_value"))
        for (size_t i = 0; i < m->length(); ++i)
            if (auto x = exact_value(*m, i)) r.exact.push_back(*x);
    if (const Attribute* range = numeric_attribute(v, "valid_range"); range && range->length() >= 2)
        r.exact_min = exact_bound(*range, 0, true), r.exact_max = exact_bound(*range, 1, false);
    if (const Attribute* lo = numeric_attribute(v, "valid_min")) r.exact_min = exact_bound(*lo, 0, true);
    if (const Attribute* hi = numeric_attribute(v, "valid_max")) r.exact_max = exact_bound(*hi, 0, false);
}

void add_floating_rules(MissingRules& r, const Variable& v) {
    if (const Attribute* f = numeric_attribute(v, "_FillValue"))
        r.values.push_back(f->as_double(0));
    else
        r.values.push_back(default_fill_as_double(r.type));
    if (const Attribute* m = numeric_attribute(v, "missing_value"))
        for (size_t i = 0; i < m->length(); ++i) r.values.push_back(m->as_double(i));
    if (const Attribute* range = numeric_attribute(v, "valid_range"); range && range->length() >= 2)
        r.min = range->as_double(0), r.max = range->as_double(1);
    if (const Attribute* lo = numeric_attribute(v, "valid_min")) r.min = lo->as_double(0);
    if (const Attribute* hi = numeric_attribute(v, "valid_max")) r.max = hi->as_double(0);
}

bool same_double(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

bool MissingRules::masks(const uint8_t* element) const {
    if (is_integer_type(type)) {
        const WideInt v = element_as_wide(type, element);
        for (WideInt m : exact)
            if (v == m) return true;
        return (exact_min && v < *exact_min) || (exact_max && v > *exact_max);
    }
    const double v = element_as_double(type, element, 0);
    for (double m : values)
        if (same_double(v, m)) return true;
    return (min && v < *min) || (max && v > *max);
}

MissingRules missing_rules(const Variable& v, NcType type) {
    MissingRules r;
    r.type = type;
    if (type == NcType::Char) return r;
    if (is_integer_type(type))
        add_integer_rules(r, v);
    else
        add_floating_rules(r, v);
    return r;
}

bool masking_changes_values(const MissingRules& rules, NcType master, const uint8_t* master_fill) {
    if (rules.empty()) return false;
    if (rules.type != master || rules.has_range()) return true;
    if (is_integer_type(master)) {
        const WideInt fill = element_as_wide(master, master_fill);
        for (WideInt m : rules.exact)
            if (m != fill) return true;
        return false;
    }
    const double fill = element_as_double(master, master_fill, 0);
    for (double m : rules.values)
        if (!same_double(m, fill)) return true;
    return false;
}

void conform_elements(const MissingRules& rules, bool mask, const Affine& value, NcType from, const uint8_t* src,
                      NcType to, uint8_t* dst, uint64_t n, const uint8_t* master_fill) {
    if (!mask && value.is_identity()) {
        convert_elements(from, src, to, dst, n, master_fill);  // integer pairs exactly (codecs/types)
        return;
    }
    const size_t ssize = type_size(from), msize = type_size(to);
    for (uint64_t e = 0; e < n; ++e) {
        const uint8_t* x = src + e * ssize;
        uint8_t* y = dst + e * msize;
        if (mask && rules.masks(x))
            std::memcpy(y, master_fill, msize);
        else if (value.is_identity())
            convert_elements(from, x, to, y, 1, master_fill);
        else
            double_to_element(value.scale * element_as_double(from, x, 0) + value.offset, to, y, master_fill);
    }
}

}  // namespace ncafs::agg
