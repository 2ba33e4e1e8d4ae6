#include "codecs/ds/ds_attributes.hpp"

#include <limits>

namespace ncafs::ds {

namespace {

Json element_to_json(NcType t, const Attribute& a, size_t i) {
    switch (t) {
        case NcType::Float:
        case NcType::Double: return Json(a.as_double(i));
        case NcType::UInt64: {
            uint64_t v;
            std::memcpy(&v, a.values.data() + i * 8, 8);
            return Json(v);
        }
        case NcType::UInt: {
            uint32_t v;
            std::memcpy(&v, a.values.data() + i * 4, 4);
            return Json(static_cast<uint64_t>(v));
        }
        case NcType::UShort: {
            uint16_t v;
            std::memcpy(&v, a.values.data() + i * 2, 2);
            return Json(static_cast<uint64_t>(v));
        }
        case NcType::UByte: return Json(static_cast<uint64_t>(a.values[i]));
        case NcType::Int64: {
            int64_t v;
            std::memcpy(&v, a.values.data() + i * 8, 8);
            return Json(v);
        }
        case NcType::Int: {
            int32_t v;
            std::memcpy(&v, a.values.data() + i * 4, 4);
            return Json(static_cast<int64_t>(v));
        }
        case NcType::Short: {
            int16_t v;
            std::memcpy(&v, a.values.data() + i * 2, 2);
            return Json(static_cast<int64_t>(v));
        }
        case NcType::Byte: return Json(static_cast<int64_t>(static_cast<int8_t>(a.values[i])));
        case NcType::Char: break;
    }
    return Json(nullptr);
}

template <typename T>
Attribute integers(const std::string& name, NcType t, const std::vector<Json>& values) {
    std::vector<T> v;
    for (const auto& j : values) {
        if (j.is_boolean()) v.push_back(static_cast<T>(j.get<bool>() ? 1 : 0));
        else if (j.is_number_unsigned()) v.push_back(static_cast<T>(j.get<uint64_t>()));
        else v.push_back(static_cast<T>(j.get<int64_t>()));
    }
    return Attribute::numeric(name, t, v);
}

}  // namespace

Json attribute_to_json(const Attribute& a) {
    if (a.type == NcType::Char) {
        std::string s;
        for (uint8_t c : a.values)
            if (c != 0) s += static_cast<char>(c);
        return Json(s);
    }
    const size_t n = a.length();
    if (n == 1) return element_to_json(a.type, a, 0);
    Json list = Json::array();
    for (size_t i = 0; i < n; ++i) list.push_back(element_to_json(a.type, a, i));
    return list;
}

std::optional<Attribute> json_to_attribute(const std::string& name, const Json& value) {
    if (value.is_null()) return std::nullopt;
    if (value.is_string()) return Attribute::text(name, value.get<std::string>());
    std::vector<Json> items;
    if (value.is_array()) {
        if (value.empty()) return Attribute::text(name, "");
        for (const auto& e : value) items.push_back(e);
    } else {
        items.push_back(value);
    }
    bool all_numbers = true, any_float = false, any_bool_only = true;
    for (const auto& e : items) {
        if (!e.is_number() && !e.is_boolean()) all_numbers = false;
        if (e.is_number_float()) any_float = true;
        if (!e.is_boolean()) any_bool_only = false;
    }
    if (!all_numbers || (value.is_object())) return Attribute::text(name, python_json_dumps(value));
    if (any_float) {
        std::vector<double> v;
        for (const auto& e : items)
            v.push_back(e.is_boolean() ? (e.get<bool>() ? 1.0 : 0.0) : e.get<double>());
        return Attribute::numeric(name, NcType::Double, v);
    }
    if (any_bool_only) return integers<int8_t>(name, NcType::Byte, items);
    bool fit32 = true, fit64 = true;
    for (const auto& e : items) {
        if (e.is_number_unsigned()) {
            const uint64_t u = e.get<uint64_t>();
            if (u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) fit32 = false;
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fit64 = false;
        } else if (e.is_number_integer()) {
            const int64_t s = e.get<int64_t>();
            if (s < std::numeric_limits<int32_t>::min() || s > std::numeric_limits<int32_t>::max()) fit32 = false;
        }
    }
    if (fit32) return integers<int32_t>(name, NcType::Int, items);
    if (fit64) return integers<int64_t>(name, NcType::Int64, items);
    for (const auto& e : items)  // some value > INT64_MAX: uint64 only if none is negative
        if (e.is_number_integer() && !e.is_number_unsigned() && e.get<int64_t>() < 0) {
            std::vector<double> v;
            for (const auto& x : items) v.push_back(x.get<double>());
            return Attribute::numeric(name, NcType::Double, v);
        }
    return integers<uint64_t>(name, NcType::UInt64, items);
}

}  // namespace ncafs::ds
