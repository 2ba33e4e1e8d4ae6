#include "codecs/types.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "codecs/type_dispatch.hpp"

namespace ncafs {

namespace {

struct TypeInfo {
    std::string_view name;
    size_t size;
    std::array<uint8_t, 8> fill;  // big-endian, first `size` bytes
};

// Fill bytes copied from the spec ("FILL_BYTE=\x81" ...).
const TypeInfo& info(NcType t) {
    static const TypeInfo table[] = {
        {"byte", 1, {0x81}},
        {"char", 1, {0x00}},
        {"short", 2, {0x80, 0x01}},
        {"int", 4, {0x80, 0x00, 0x00, 0x01}},
        {"float", 4, {0x7C, 0xF0, 0x00, 0x00}},
        {"double", 8, {0x47, 0x9E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
        {"ubyte", 1, {0xFF}},
        {"ushort", 2, {0xFF, 0xFF}},
        {"uint", 4, {0xFF, 0xFF, 0xFF, 0xFF}},
        {"int64", 8, {0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02}},
        {"uint64", 8, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE}},
    };
    auto tag = static_cast<int32_t>(t);
    if (tag < 1 || tag > 11) throw std::invalid_argument("invalid netCDF type tag " + std::to_string(tag));
    return table[tag - 1];
}

inline uint16_t bswap(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t bswap(uint64_t v) { return __builtin_bswap64(v); }

// Copies n elements of type U from src to dst (the same, or not
// overlapping) reversing the bytes of each (memcpy: either may be unaligned).
template <typename U>
void swap_each(const uint8_t* src, uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        U v;
        std::memcpy(&v, src + sizeof(U) * i, sizeof(U));
        v = bswap(v);
        std::memcpy(dst + sizeof(U) * i, &v, sizeof(U));
    }
}

template <typename T>
T native_fill(NcType t) {
    std::array<uint8_t, 8> bytes = info(t).fill;
    swap_from_big_endian(t, bytes.data(), 1);
    T v;
    std::memcpy(&v, bytes.data(), sizeof(T));
    return v;
}

// Converts one value with the range policy; false when out of range.
template <typename From, typename To>
bool convert_one(From x, To& out) {
    if constexpr (std::is_same_v<From, To>) {
        out = x;
        return true;
    } else if constexpr (std::is_floating_point_v<To>) {
        out = static_cast<To>(x);  // float<-double may round; inf for huge values is accepted IEEE behaviour
        return true;
    } else if constexpr (std::is_floating_point_v<From>) {
        if (std::isnan(x)) return false;
        long double r = std::round(static_cast<long double>(x));
        if (r < static_cast<long double>(std::numeric_limits<To>::lowest()) ||
            r > static_cast<long double>(std::numeric_limits<To>::max()))
            return false;
        out = static_cast<To>(r);
        return true;
    } else {
        // integer to integer: exact comparison without overflow. Char
        // (netCDF text) counts as unsigned bytes.
        if constexpr (std::is_same_v<From, char>) {
            return convert_one(static_cast<unsigned char>(x), out);
        } else if constexpr (std::is_same_v<To, char>) {
            unsigned char u;
            if (!convert_one(x, u)) return false;
            out = static_cast<char>(u);
            return true;
        } else if (std::in_range<To>(x)) {
            out = static_cast<To>(x);
            return true;
        }
        return false;
    }
}

}  // namespace

bool is_valid_type_tag(int64_t tag) { return tag >= 1 && tag <= 11; }
size_t type_size(NcType t) { return info(t).size; }
std::string_view type_name(NcType t) { return info(t).name; }

std::optional<NcType> type_from_name(std::string_view name) {
    for (NcType t : kAllTypes)
        if (info(t).name == name) return t;
    struct Alias {
        std::string_view name;
        NcType type;
    };
    static constexpr Alias aliases[] = {
        {"int8", NcType::Byte},     {"uint8", NcType::UByte},    {"int16", NcType::Short},
        {"uint16", NcType::UShort}, {"int32", NcType::Int},      {"uint32", NcType::UInt},
        {"long", NcType::Int},      {"real", NcType::Float},     {"float32", NcType::Float},
        {"float64", NcType::Double}, {"character", NcType::Char}, {"unsigned byte", NcType::UByte},
    };
    for (const auto& a : aliases)
        if (a.name == name) return a.type;
    return std::nullopt;
}

bool is_cdf5_only(NcType t) { return static_cast<int32_t>(t) >= static_cast<int32_t>(NcType::UByte); }

bool is_integer_type(NcType t) {
    return t != NcType::Char && t != NcType::Float && t != NcType::Double;
}

bool is_unsigned_type(NcType t) {
    return t == NcType::UByte || t == NcType::UShort || t == NcType::UInt || t == NcType::UInt64;
}

std::span<const uint8_t> default_fill_big_endian(NcType t) {
    const auto& i = info(t);
    return {i.fill.data(), i.size};
}

double default_fill_as_double(NcType t) {
    return visit_type(t, [t](auto v) { return static_cast<double>(native_fill<decltype(v)>(t)); });
}

void swap_to_big_endian(NcType t, void* data, size_t n) {
    if constexpr (std::endian::native == std::endian::big) return;
    copy_swapped_to_big_endian(t, data, data, n);
}

void copy_swapped_to_big_endian(NcType t, const void* src, void* dst, size_t n) {
    const auto* from = static_cast<const uint8_t*>(src);
    auto* to = static_cast<uint8_t*>(dst);
    if constexpr (std::endian::native == std::endian::big) {
        if (from != to) std::memmove(to, from, n * type_size(t));
        return;
    }
    switch (type_size(t)) {
        case 2: return swap_each<uint16_t>(from, to, n);
        case 4: return swap_each<uint32_t>(from, to, n);
        case 8: return swap_each<uint64_t>(from, to, n);
        default:
            if (from != to) std::memmove(to, from, n * type_size(t));
    }
}

void fill_elements(void* dst, const void* element, size_t element_size, size_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    if (n == 0) return;
    std::memcpy(out, element, element_size);
    // Doubling copies: O(log n) memcpy calls.
    size_t done = 1;
    while (done < n) {
        size_t chunk = std::min(done, n - done);
        std::memcpy(out + done * element_size, out, chunk * element_size);
        done += chunk;
    }
}

double element_as_double(NcType t, const void* data, size_t i) {
    return visit_type(t, [&](auto v) {
        using T = decltype(v);
        T x;
        std::memcpy(&x, static_cast<const uint8_t*>(data) + i * sizeof(T), sizeof(T));
        return static_cast<double>(x);
    });
}

size_t convert_elements(NcType from, const void* src, NcType to, void* dst, size_t n,
                        const void* out_of_range_fill) {
    if (from == to) {
        std::memmove(dst, src, n * type_size(from));
        return 0;
    }
    return visit_type(from, [&](auto f) {
        return visit_type(to, [&](auto g) {
            using From = decltype(f);
            using To = decltype(g);
            To fill;
            if (out_of_range_fill)
                std::memcpy(&fill, out_of_range_fill, sizeof(To));
            else
                fill = native_fill<To>(to);
            const auto* in = static_cast<const uint8_t*>(src);
            auto* out = static_cast<uint8_t*>(dst);
            size_t bad = 0;
            for (size_t i = 0; i < n; ++i) {
                From x;
                std::memcpy(&x, in + i * sizeof(From), sizeof(From));
                To y;
                if (!convert_one(x, y)) {
                    y = fill;
                    ++bad;
                }
                std::memcpy(out + i * sizeof(To), &y, sizeof(To));
            }
            return bad;
        });
    });
}

bool double_to_element(double v, NcType to, void* dst, const void* out_of_range_fill) {
    return convert_elements(NcType::Double, &v, to, dst, 1, out_of_range_fill) == 0;
}

}  // namespace ncafs
