#include "codecs/ncstream/framing.hpp"

#include <algorithm>
#include <cstdio>

namespace ncafs::ncstream {

size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++n;
    }
    return n;
}

size_t encode_varint(uint64_t v, uint8_t* out) {
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = static_cast<uint8_t>(v | 0x80);
        v >>= 7;
    }
    out[n++] = static_cast<uint8_t>(v);
    return n;
}

void append_varint(std::string& out, uint64_t v) {
    uint8_t buf[10];
    size_t n = encode_varint(v, buf);
    out.append(reinterpret_cast<const char*>(buf), n);
}

VarintResult decode_varint(std::span<const uint8_t> bytes) {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
        const uint64_t group = bytes[i] & 0x7f;
        // Nine groups hold 63 bits; a tenth byte could only add bit 63 or
        // beyond (or be non-minimal padding), so it is refused.
        if (i >= 9) return {VarintResult::Status::TooLarge, 0, 0};
        value |= group << (7 * i);
        if ((bytes[i] & 0x80) == 0) return {VarintResult::Status::Ok, value, i + 1};
    }
    return {VarintResult::Status::NeedMore, 0, 0};
}

bool magic_equals(std::span<const uint8_t, 4> m, const Magic& want) { return std::equal(m.begin(), m.end(), want.begin()); }

std::string describe_magic(std::span<const uint8_t, 4> m) {
    struct Named {
        const Magic* magic;
        const char* name;
    };
    static constexpr Named kNames[] = {{&kMagicStart, "MAGIC_START"}, {&kMagicHeader, "MAGIC_HEADER"},
                                       {&kMagicData, "MAGIC_DATA"},   {&kMagicData2, "MAGIC_DATA2"},
                                       {&kMagicVData, "MAGIC_VDATA"}, {&kMagicVEnd, "MAGIC_VEND"},
                                       {&kMagicErr, "MAGIC_ERR"},     {&kMagicEnd, "MAGIC_END"}};
    for (const auto& n : kNames)
        if (magic_equals(m, *n.magic)) return n.name;
    char hex[16];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", m[0], m[1], m[2], m[3]);
    return std::string("unknown magic ") + hex;
}

}  // namespace ncafs::ncstream
