#include "codecs/zarr/base64.hpp"

#include <array>

namespace ncafs::zarr {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> decoding_table() {
    std::array<int8_t, 256> t{};
    for (auto& v : t) v = -1;
    for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
    return t;
}

}  // namespace

std::optional<std::vector<uint8_t>> base64_decode(std::string_view text) {
    static constexpr auto table = decoding_table();
    if (text.size() % 4 != 0) return std::nullopt;
    size_t padding = 0;
    if (!text.empty() && text.back() == '=') padding = text.size() >= 2 && text[text.size() - 2] == '=' ? 2 : 1;
    std::vector<uint8_t> out;
    out.reserve(text.size() / 4 * 3);
    uint32_t bits = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const bool pad = i >= text.size() - padding;
        const int8_t v = pad ? 0 : table[static_cast<uint8_t>(text[i])];
        if (v < 0) return std::nullopt;
        bits = (bits << 6) | static_cast<uint32_t>(v);
        if (i % 4 == 3) {
            out.push_back(static_cast<uint8_t>(bits >> 16));
            out.push_back(static_cast<uint8_t>(bits >> 8));
            out.push_back(static_cast<uint8_t>(bits));
            bits = 0;
        }
    }
    out.resize(out.size() - padding);
    return out;
}

std::string base64_encode(std::span<const uint8_t> bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t bits = uint32_t{bytes[i]} << 16;
        if (n > 1) bits |= uint32_t{bytes[i + 1]} << 8;
        if (n > 2) bits |= bytes[i + 2];
        for (size_t k = 0; k < 4; ++k)
            out.push_back(k <= n ? kAlphabet[(bits >> (18 - 6 * k)) & 63] : '=');
    }
    return out;
}

}  // namespace ncafs::zarr
