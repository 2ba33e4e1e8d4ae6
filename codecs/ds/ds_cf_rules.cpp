#include "codecs/ds/ds_cf_rules.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "codecs/type_dispatch.hpp"

namespace ncafs::ds {

namespace {

// ds arithmetic treats char elements as unsigned bytes, as numpy does with 'S1'.
template <typename F>
decltype(auto) visit_numeric(NcType t, F&& f) {
    return visit_type<uint8_t>(t, std::forward<F>(f));
}

template <typename T>
T load(const void* p, size_t i) {
    T v;
    std::memcpy(&v, static_cast<const uint8_t*>(p) + i * sizeof(T), sizeof(T));
    return v;
}

template <typename T>
TypedValue make_value(NcType t, T v) {
    TypedValue r{t, {}};
    std::memcpy(r.bytes.data(), &v, sizeof(T));
    return r;
}

// Exact value (long double holds every int64/uint64 and double exactly).
long double exact(NcType t, const void* p, size_t i = 0) {
    return visit_numeric(t, [&](auto tag) -> long double { return static_cast<long double>(load<decltype(tag)>(p, i)); });
}

bool is_float(NcType t) { return t == NcType::Float || t == NcType::Double; }

NcType unsigned_of(NcType t) {
    switch (t) {
        case NcType::Byte: return NcType::UByte;
        case NcType::Short: return NcType::UShort;
        case NcType::Int: return NcType::UInt;
        case NcType::Int64: return NcType::UInt64;
        default: return t;
    }
}

// numpy's astype(stored) of one attribute element, C-cast semantics; nullopt
// when the cast is undefined (NaN or out of range into an integer type),
// which numpy's _safecast would then report as unequal anyway.
std::optional<TypedValue> cast_to(NcType to, NcType from, const void* p, size_t i) {
    const long double v = exact(from, p, i);
    return visit_numeric(to, [&](auto tag) -> std::optional<TypedValue> {
        using T = decltype(tag);
        if constexpr (std::is_floating_point_v<T>) {
            if (from == NcType::Double || from == NcType::Float)
                return make_value(to, static_cast<T>(static_cast<double>(v)));
            return make_value(to, static_cast<T>(v));  // integer: one rounding, as numpy
        } else {
            if (std::isnan(v)) return std::nullopt;
            const long double t = std::trunc(v);
            if (t < static_cast<long double>(std::numeric_limits<T>::min()) ||
                t > static_cast<long double>(std::numeric_limits<T>::max()))
                return std::nullopt;
            return make_value(to, static_cast<T>(t));
        }
    });
}

// numpy's _check_safecast: every element of the attribute, cast to the
// variable type, compares equal to the original (or both NaN). Text
// attributes on numeric variables are never safe.
std::optional<std::vector<TypedValue>> safe_cast_attribute(const Variable& v, const char* name) {
    const Attribute* a = v.find_attribute(name);
    if (!a || a->length() == 0) return std::nullopt;
    if (v.type == NcType::Char) {
        // numpy.array(b"x", "S1"): safe only for a one-character value.
        if (a->type != NcType::Char || a->values.size() != 1) return std::nullopt;
        TypedValue t{NcType::Char, {}};
        t.bytes[0] = a->values[0];
        return std::vector<TypedValue>{t};
    }
    if (a->type == NcType::Char) return std::nullopt;
    std::vector<TypedValue> out;
    for (size_t i = 0; i < a->length(); ++i) {
        auto c = cast_to(v.type, a->type, a->values.data(), i);
        if (!c) return std::nullopt;
        const long double orig = exact(a->type, a->values.data(), i);
        const long double back = exact(v.type, c->bytes.data());
        if (!(orig == back || (std::isnan(orig) && std::isnan(back)))) return std::nullopt;
        out.push_back(*c);
    }
    return out;
}

bool is_nan_value(const TypedValue& t) { return is_float(t.type) && std::isnan(exact(t.type, t.bytes.data())); }

// The numpy type as (kind, size): kind 0 signed int, 1 unsigned, 2 float.
struct NpType {
    int kind;
    int size;
};
NpType np_of(NcType t) {
    switch (t) {
        case NcType::Byte: return {0, 1};
        case NcType::Short: return {0, 2};
        case NcType::Int: return {0, 4};
        case NcType::Int64: return {0, 8};
        case NcType::UByte:
        case NcType::Char: return {1, 1};
        case NcType::UShort: return {1, 2};
        case NcType::UInt: return {1, 4};
        case NcType::UInt64: return {1, 8};
        case NcType::Float: return {2, 4};
        case NcType::Double: return {2, 8};
    }
    return {2, 8};
}
NcType nc_of(NpType t) {
    if (t.kind == 2) return t.size <= 4 ? NcType::Float : NcType::Double;  // float16 never survives (see promotion)
    static const NcType s[] = {NcType::Byte, NcType::Short, NcType::Int, NcType::Int64};
    static const NcType u[] = {NcType::UByte, NcType::UShort, NcType::UInt, NcType::UInt64};
    const int idx = t.size == 1 ? 0 : t.size == 2 ? 1 : t.size == 4 ? 2 : 3;
    return t.kind == 0 ? s[idx] : u[idx];
}

// numpy.promote_types for integer/float kinds (float16 as {2, 2}).
NpType promote(NpType a, NpType b) {
    if (a.kind == b.kind) return {a.kind, std::max(a.size, b.size)};
    if (a.kind == 2 || b.kind == 2) {
        const NpType f = a.kind == 2 ? a : b, i = a.kind == 2 ? b : a;
        const int need = i.size == 1 ? 2 : i.size == 2 ? 4 : 8;
        return {2, std::max(f.size, need)};
    }
    const NpType s = a.kind == 0 ? a : b, u = a.kind == 0 ? b : a;
    if (u.size < s.size) return s;
    if (u.size == 8) return {2, 8};
    return {0, u.size * 2};
}

NpType min_scalar_type(const TypedValue& v) {
    const long double x = exact(v.type, v.bytes.data());
    if (is_float(v.type)) {
        if (!std::isfinite(x) || std::fabs(x) <= 65504.0L) return {2, 2};
        if (std::fabs(x) <= static_cast<long double>(std::numeric_limits<float>::max())) return {2, 4};
        return {2, 8};
    }
    if (x >= 0) {
        if (x <= 255) return {1, 1};
        if (x <= 65535) return {1, 2};
        if (x <= 4294967295.0L) return {1, 4};
        return {1, 8};
    }
    if (x >= -128) return {0, 1};
    if (x >= -32768) return {0, 2};
    if (x >= -2147483648.0L) return {0, 4};
    return {0, 8};
}

// Arithmetic on one element in numpy's way: convert to the step type, then
// operate in it (integers wrap modulo 2^bits).
template <typename T>
T convert(NcType from, const void* p) {
    return visit_numeric(from, [&](auto tag) -> T {
        using F = decltype(tag);
        return static_cast<T>(load<F>(p, 0));
    });
}

template <typename T>
T op(T a, T b, bool multiply) {
    if constexpr (std::is_floating_point_v<T>) {
        return multiply ? a * b : a + b;
    } else {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(multiply ? static_cast<U>(static_cast<U>(a) * static_cast<U>(b))
                                       : static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
}

// x (type `from`, native bytes) op s (TypedValue) in type `to`; result bytes into r.
void step(NcType from, const void* x, const TypedValue* s, bool multiply, NcType to, void* r) {
    visit_numeric(to, [&](auto tag) {
        using T = decltype(tag);
        T a = convert<T>(from, x);
        T v = s ? op<T>(a, convert<T>(s->type, s->bytes.data()), multiply) : a;
        std::memcpy(r, &v, sizeof(T));
        return 0;
    });
}

bool equals(NcType t, const void* data, size_t i, const TypedValue& v) {
    return visit_numeric(t, [&](auto tag) -> bool {
        using T = decltype(tag);
        return load<T>(data, i) == load<T>(v.bytes.data(), 0);
    });
}

// The single numeric value of a scale_factor/add_offset attribute; numpy's
// float() accepts only a one-element numeric attribute (text: we treat it as
// unusable; netCDF4-python would fail on the multiplication).
std::optional<TypedValue> scalar_attribute(const Variable& v, const char* name, bool& present, bool& valid) {
    const Attribute* a = v.find_attribute(name);
    if (!a) return std::nullopt;
    present = true;
    if (a->type == NcType::Char || a->length() != 1) {
        valid = false;
        return std::nullopt;
    }
    TypedValue t{a->type, {}};
    std::memcpy(t.bytes.data(), a->values.data(), type_size(a->type));
    return t;
}

}  // namespace

NcType numpy_scalar_promotion(NcType array, const TypedValue& scalar) {
    const NpType a = np_of(array), s = np_of(scalar.type);
    const int cat_a = a.kind == 2 ? 2 : 1, cat_s = s.kind == 2 ? 2 : 1;
    if (cat_s > cat_a) return nc_of(promote(a, s));
    return nc_of(promote(a, min_scalar_type(scalar)));
}

namespace {

// netCDF4-python 1.6.2 (Debian 12, the suite's reference) tests the
// attribute's truth value: any non-empty text (even "false") or a
// non-zero number. Later releases accept only "true"/"True".
bool unsigned_attribute_set(const Variable& v) {
    bool is_unsigned = false;
    if (const Attribute* u = v.find_attribute("_Unsigned")) {
        if (u->type == NcType::Char) {
            for (uint8_t c : u->values) is_unsigned = is_unsigned || c != 0;  // getncattr drops NULs
        } else if (u->length() == 1) {
            is_unsigned = u->as_double() != 0;
        }
    }
    return is_unsigned;
}

// missing_value, _FillValue (or the default fill) and the valid range, in the viewed type.
void set_masking_rules(const Variable& v, bool unsigned_view, CfRules& r) {
    auto reinterpret = [&](TypedValue t) {
        t.type = r.viewed;  // same bytes, unsigned type
        return t;
    };
    if (auto mv = safe_cast_attribute(v, "missing_value")) {
        for (const auto& m : *mv) {
            if (is_nan_value(m)) r.missing_nan = true;
            else r.missing_values.push_back(unsigned_view ? reinterpret(m) : m);
        }
    }
    if (auto fv = safe_cast_attribute(v, "_FillValue")) {
        const TypedValue& f = fv->front();
        if (is_nan_value(f)) r.fill_nan = true;
        else r.fill = unsigned_view ? reinterpret(f) : f;
    } else {
        std::array<uint8_t, 8> b{};
        std::memcpy(b.data(), default_fill_big_endian(v.type).data(), type_size(v.type));
        swap_from_big_endian(v.type, b.data(), 1);
        r.default_fill = exact(v.type, b.data());
    }
    auto vr = safe_cast_attribute(v, "valid_range");
    if (vr && vr->size() == 2) {
        r.valid_min = exact(v.type, (*vr)[0].bytes.data());
        r.valid_max = exact(v.type, (*vr)[1].bytes.data());
    } else {
        if (auto a = safe_cast_attribute(v, "valid_min")) r.valid_min = exact(v.type, a->front().bytes.data());
        if (auto a = safe_cast_attribute(v, "valid_max")) r.valid_max = exact(v.type, a->front().bytes.data());
    }
}

// scale_factor/add_offset: which operation, and the types numpy promotes to.
void set_scaling_rules(const Variable& v, CfRules& r) {
    bool has_sf = false, has_ao = false, valid = true;
    auto sf = scalar_attribute(v, "scale_factor", has_sf, valid);
    auto ao = scalar_attribute(v, "add_offset", has_ao, valid);
    r.out = r.viewed;
    if (!valid) return;
    auto value_of = [](const TypedValue& t) { return exact(t.type, t.bytes.data()); };
    if (has_sf && has_ao) {
        r.scale_factor = *sf, r.add_offset = *ao;
        if (value_of(*ao) != 0 || value_of(*sf) != 1) {
            r.scale = CfRules::Scale::MultiplyAdd;
            r.after_multiply = numpy_scalar_promotion(r.viewed, *sf);
            r.out = numpy_scalar_promotion(r.after_multiply, *ao);
        } else {
            r.scale = CfRules::Scale::Cast;  // data.astype(scale_factor.dtype)
            r.after_multiply = sf->type;
            r.out = sf->type;
        }
    } else if (has_sf && value_of(*sf) != 1) {
        r.scale_factor = *sf;
        r.scale = CfRules::Scale::Multiply;
        r.after_multiply = r.out = numpy_scalar_promotion(r.viewed, *sf);
    } else if (has_ao && value_of(*ao) != 0) {
        r.add_offset = *ao;
        r.scale = CfRules::Scale::Add;
        r.after_multiply = r.viewed;
        r.out = numpy_scalar_promotion(r.viewed, *ao);
    }
}

}  // namespace

CfRules cf_rules_for(const Variable& v) {
    CfRules r;
    r.stored = v.type;
    r.viewed = v.type;
    r.out = v.type;
    r.is_char = v.type == NcType::Char;
    if (r.is_char) {
        if (auto f = safe_cast_attribute(v, "_FillValue")) r.fill = f->front();
        else r.fill = TypedValue{NcType::Char, {}};  // default fill '\0'
        return r;
    }
    const bool unsigned_view = unsigned_attribute_set(v) && is_integer_type(v.type) && !is_unsigned_type(v.type);
    if (unsigned_view) r.viewed = unsigned_of(v.type);
    set_masking_rules(v, unsigned_view, r);
    set_scaling_rules(v, r);
    return r;
}

void apply_cf_rules(const CfRules& r, const void* in, size_t n, uint8_t* missing, void* out) {
    const NcType t = r.viewed;
    const size_t in_size = type_size(r.stored), out_size = type_size(r.out);
    const auto* src = static_cast<const uint8_t*>(in);
    auto* dst = static_cast<uint8_t*>(out);
    const bool float_data = is_float(t);
    for (size_t i = 0; i < n; ++i) {
        bool m = false;
        const long double x = (r.default_fill || r.valid_min || r.valid_max || float_data) && !r.is_char
                                  ? exact(t, src, i)
                                  : 0.0L;
        for (const auto& mv : r.missing_values) m = m || equals(t, src, i, mv);
        if (float_data && (r.missing_nan || r.fill_nan) && std::isnan(x)) m = true;
        if (r.fill) m = m || (r.is_char ? src[i] == r.fill->bytes[0] : equals(t, src, i, *r.fill));
        if (r.default_fill && x == *r.default_fill) m = true;
        if (r.valid_min && x < *r.valid_min) m = true;
        if (r.valid_max && x > *r.valid_max) m = true;
        missing[i] = m ? 1 : 0;
        const uint8_t* xi = src + i * in_size;
        uint8_t* yo = dst + i * out_size;
        switch (r.scale) {
            case CfRules::Scale::None: std::memcpy(yo, xi, in_size); break;
            case CfRules::Scale::Cast: step(t, xi, nullptr, true, r.out, yo); break;
            case CfRules::Scale::Multiply: step(t, xi, &r.scale_factor, true, r.out, yo); break;
            case CfRules::Scale::Add: step(t, xi, &r.add_offset, false, r.out, yo); break;
            case CfRules::Scale::MultiplyAdd: {
                std::array<uint8_t, 8> tmp{};
                step(t, xi, &r.scale_factor, true, r.after_multiply, tmp.data());
                step(r.after_multiply, tmp.data(), &r.add_offset, false, r.out, yo);
                break;
            }
        }
    }
}

}  // namespace ncafs::ds
