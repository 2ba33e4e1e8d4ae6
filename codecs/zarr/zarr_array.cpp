#include "codecs/zarr/zarr_array.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "codecs/checked_math.hpp"
#include "codecs/zarr/base64.hpp"
#include "codecs/zarr/zarr_codecs.hpp"

namespace ncafs::zarr {

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

std::vector<uint64_t> dimension_list(const json& j, const char* field, size_t max_rank) {
    if (!j.is_array()) fail(std::string(field) + " is not a list");
    if (j.size() > max_rank) fail(std::string(field) + " has " + std::to_string(j.size()) + " dimensions (more than " +
                                  std::to_string(max_rank) + ")");
    std::vector<uint64_t> out;
    for (const auto& v : j) {
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
            fail(std::string(field) + " holds " + v.dump() + ", not a length");
        out.push_back(v.get<uint64_t>());
    }
    return out;
}

// Fills `a`'s sizes from shape and chunks: every product checked.
void check_sizes(ZarrArray& a, const ZarrLimits& limits) {
    if (a.chunks.size() != a.shape.size())
        fail("chunks has " + std::to_string(a.chunks.size()) + " dimensions, shape " + std::to_string(a.shape.size()));
    const uint64_t item = type_size(a.dtype.type);
    uint64_t array_bytes = item;
    a.chunk_elements = 1;
    for (size_t k = 0; k < a.shape.size(); ++k) {
        if (a.chunks[k] == 0) fail("chunks[" + std::to_string(k) + "] is 0");
        auto total = checked::mul(array_bytes, a.shape[k]);
        if (!total || *total > limits.max_array_bytes)
            fail("shape " + json(a.shape).dump() + " exceeds the bound of " + std::to_string(limits.max_array_bytes) +
                 " bytes per array");
        array_bytes = *total;
        auto elements = checked::mul(a.chunk_elements, a.chunks[k]);
        if (!elements || *elements > limits.max_chunk_bytes / item)
            fail("chunks " + json(a.chunks).dump() + " exceed the bound of " + std::to_string(limits.max_chunk_bytes) +
                 " bytes per decoded chunk");
        a.chunk_elements = *elements;
        a.chunk_grid.push_back(a.shape[k] / a.chunks[k] + (a.shape[k] % a.chunks[k] != 0));
    }
    a.chunk_bytes = a.chunk_elements * item;
}

std::optional<double> special_float(const std::string& s) {
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    return std::nullopt;
}

// One element of the array's type, native order.
std::optional<std::vector<uint8_t>> parse_fill(const json& j, const ZarrDtype& dtype) {
    if (j.is_null()) return std::nullopt;
    const NcType t = dtype.type;
    std::vector<uint8_t> out(type_size(t));
    const bool floating = t == NcType::Float || t == NcType::Double;
    if (j.is_boolean()) {
        out[0] = j.get<bool>() ? 1 : 0;
        return out;
    }
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        if (auto special = special_float(s); special && floating) {
            double_to_element(*special, t, out.data());
            return out;
        }
        // Byte types: base64 text (an empty text: zero).
        auto bytes = base64_decode(s);
        if (!bytes || bytes->size() > out.size()) fail("fill_value \"" + s + "\" is not a value of the dtype");
        std::memcpy(out.data(), bytes->data(), bytes->size());
        return out;
    }
    if (!j.is_number()) fail("fill_value " + j.dump() + " is not a number");
    if (t == NcType::Int64 && j.is_number_integer()) {
        const int64_t v = j.get<int64_t>();
        std::memcpy(out.data(), &v, 8);
    } else if (t == NcType::UInt64 && j.is_number_unsigned()) {
        const uint64_t v = j.get<uint64_t>();
        std::memcpy(out.data(), &v, 8);
    } else if (!double_to_element(j.get<double>(), t, out.data())) {
        fail("fill_value " + j.dump() + " is out of the range of the dtype");
    }
    return out;
}

std::optional<ZarrCodec> parse_codec(const json& j, const char* where) {
    if (j.is_null()) return std::nullopt;
    if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) fail(std::string(where) + " has no codec id");
    ZarrCodec c{j["id"].get<std::string>(), j};
    if (!is_supported_codec(c.id))
        fail(std::string(where) + " uses the codec \"" + c.id + "\", which is not supported (supported: " +
             supported_codec_names() + ")");
    if (auto why = codec_refusal(c)) fail(std::string(where) + ": " + *why);
    return c;
}

}  // namespace

std::string string_member(const json& object, const char* key, const std::string& fallback) {
    if (!object.is_object() || !object.contains(key)) return fallback;
    if (!object[key].is_string()) fail(std::string(key) + " is not a string");
    return object[key].get<std::string>();
}

ZarrArray parse_zarray(const json& z, const ZarrLimits& limits) {
    if (!z.is_object()) fail(".zarray is not a JSON object");
    if (!z.contains("zarr_format") || z["zarr_format"] != 2) fail("zarr_format is not 2");
    ZarrArray a;
    if (!z.contains("dtype") || !z["dtype"].is_string())
        fail(z.contains("dtype") ? "dtype is not a simple type string (structured types are not supported)"
                                 : "no dtype");
    std::string why;
    auto dtype = parse_zarr_dtype(z["dtype"].get<std::string>(), why);
    if (!dtype) fail(why);
    a.dtype = *dtype;
    if (!z.contains("shape") || !z.contains("chunks")) fail("no shape or no chunks");
    a.shape = dimension_list(z["shape"], "shape", limits.max_rank);
    a.chunks = dimension_list(z["chunks"], "chunks", limits.max_rank);
    check_sizes(a, limits);
    const std::string order = string_member(z, "order", "C");
    if (order != "C" && order != "F") fail("order \"" + order + "\" is neither \"C\" nor \"F\"");
    a.fortran_order = order == "F";
    a.fill = parse_fill(z.value("fill_value", json()), a.dtype);
    a.compressor = parse_codec(z.value("compressor", json()), "compressor");
    if (const json filters = z.value("filters", json()); !filters.is_null()) {
        if (!filters.is_array()) fail("filters is not a list");
        if (filters.size() > limits.max_filters)
            fail(std::to_string(filters.size()) + " filters (more than " + std::to_string(limits.max_filters) + ")");
        for (const auto& f : filters) {
            if (f.is_null()) fail("a filter is null");
            a.filters.push_back(*parse_codec(f, "a filter"));
        }
    }
    const std::string sep = string_member(z, "dimension_separator", ".");
    if (sep != "." && sep != "/") fail("dimension_separator \"" + sep + "\" is neither \".\" nor \"/\"");
    a.separator = sep[0];
    return a;
}

std::string chunk_key(const ZarrArray& array, const std::vector<uint64_t>& index) {
    if (index.empty()) return "0";
    std::string key;
    for (size_t k = 0; k < index.size(); ++k) {
        if (k) key += array.separator;
        key += std::to_string(index[k]);
    }
    return key;
}

}  // namespace ncafs::zarr
