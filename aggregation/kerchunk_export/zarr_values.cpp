#include "aggregation/kerchunk_export/zarr_values.hpp"

#include <cmath>
#include <cstring>

#include "codecs/zarr/base64.hpp"

namespace ncafs::agg::kerchunk {

namespace {

nlohmann::json float_json(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
}

template <class T>
T element(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

nlohmann::json number_json(NcType t, const uint8_t* p) {
    switch (t) {
        case NcType::Byte: return element<int8_t>(p);
        case NcType::UByte: return element<uint8_t>(p);
        case NcType::Short: return element<int16_t>(p);
        case NcType::UShort: return element<uint16_t>(p);
        case NcType::Int: return element<int32_t>(p);
        case NcType::UInt: return element<uint32_t>(p);
        case NcType::Int64: return element<int64_t>(p);
        case NcType::UInt64: return element<uint64_t>(p);
        case NcType::Float: return float_json(element<float>(p));
        case NcType::Double: return float_json(element<double>(p));
        case NcType::Char: break;
    }
    return element<uint8_t>(p);
}

}  // namespace

nlohmann::json zarr_fill_value(NcType t, const uint8_t* element) {
    if (t == NcType::Char) return zarr::base64_encode(std::span<const uint8_t>(element, 1));  // Zarr v2: bytes types as base64
    return number_json(t, element);
}

nlohmann::json attribute_json(const Attribute& a) {
    if (a.type == NcType::Char) {
        std::string text = a.as_text();
        while (!text.empty() && text.back() == '\0') text.pop_back();
        return text;
    }
    const size_t n = a.length(), size = type_size(a.type);
    if (n == 1) return number_json(a.type, a.values.data());
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i) list.push_back(number_json(a.type, a.values.data() + i * size));
    return list;
}

}  // namespace ncafs::agg::kerchunk
