#include "codecs/ds/ds_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "codecs/json_depth.hpp"

namespace ncafs::ds {

namespace {

void append_u_escape(std::string& out, unsigned unit) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unit);
    out += buf;
}

// Decodes one UTF-8 sequence at s[i]; returns the code point and advances i,
// or U+FFFD (advancing one byte) for an invalid or truncated sequence.
uint32_t next_code_point(std::string_view s, size_t& i) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    int extra = 0;
    uint32_t cp = 0, min = 0;
    if ((b0 & 0xE0) == 0xC0) extra = 1, cp = b0 & 0x1F, min = 0x80;
    else if ((b0 & 0xF0) == 0xE0) extra = 2, cp = b0 & 0x0F, min = 0x800;
    else if ((b0 & 0xF8) == 0xF0) extra = 3, cp = b0 & 0x07, min = 0x10000;
    else {
        ++i;
        return 0xFFFD;
    }
    for (int k = 1; k <= extra; ++k) {
        if (i + k >= s.size()) {
            ++i;
            return 0xFFFD;
        }
        const auto b = static_cast<uint8_t>(s[i + k]);
        if ((b & 0xC0) != 0x80) {
            ++i;
            return 0xFFFD;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++i;
        return 0xFFFD;
    }
    i += extra + 1;
    return cp;
}

void append_string(std::string& out, std::string_view s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const uint32_t cp = next_code_point(s, i);
        switch (cp) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        if (cp >= 0x20 && cp <= 0x7E) {
            out += static_cast<char>(cp);
        } else if (cp < 0x10000) {
            append_u_escape(out, cp);
        } else {
            const uint32_t v = cp - 0x10000;
            append_u_escape(out, 0xD800 | (v >> 10));
            append_u_escape(out, 0xDC00 | (v & 0x3FF));
        }
    }
    out += '"';
}

void dump(std::string& out, const Json& v) {
    switch (v.type()) {
        case Json::value_t::null: out += "null"; return;
        case Json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return;
        case Json::value_t::number_integer: out += std::to_string(v.get<int64_t>()); return;
        case Json::value_t::number_unsigned: out += std::to_string(v.get<uint64_t>()); return;
        case Json::value_t::number_float: {
            const double d = v.get<double>();
            if (std::isnan(d)) out += "NaN";
            else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
            else out += python_float_repr(d);
            return;
        }
        case Json::value_t::string: append_string(out, v.get_ref<const std::string&>()); return;
        case Json::value_t::array: {
            out += '[';
            bool first = true;
            for (const auto& e : v) {
                if (!first) out += ", ";
                first = false;
                dump(out, e);
            }
            out += ']';
            return;
        }
        case Json::value_t::object: {
            out += '{';
            bool first = true;
            for (const auto& [key, e] : v.items()) {
                if (!first) out += ", ";
                first = false;
                append_string(out, key);
                out += ": ";
                dump(out, e);
            }
            out += '}';
            return;
        }
        default: out += "null"; return;  // binary / discarded: never produced by us
    }
}

// Sentinels standing for the non-finite tokens while nlohmann parses the
// text; a string can only equal one if a file spells it out, which then
// merely reads as that non-finite number.
constexpr std::string_view kNaN = "\x01ncafs-json-NaN\x01";
constexpr std::string_view kPosInf = "\x01ncafs-json-Infinity\x01";
constexpr std::string_view kNegInf = "\x01ncafs-json--Infinity\x01";

void replace_sentinels(Json& v) {
    if (v.is_string()) {
        const auto& s = v.get_ref<const std::string&>();
        if (s == kNaN) v = std::nan("");
        else if (s == kPosInf) v = HUGE_VAL;
        else if (s == kNegInf) v = -HUGE_VAL;
    } else if (v.is_array() || v.is_object()) {
        for (auto& e : v) replace_sentinels(e);
    }
}

}  // namespace

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
    std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
    std::string sign;
    if (!sci.empty() && sci[0] == '-') {
        sign = "-";
        sci.remove_prefix(1);
    }
    const size_t e = sci.find('e');
    std::string digits;
    for (char c : sci.substr(0, e))
        if (c != '.') digits += c;
    const int exp10 = std::stoi(std::string(sci.substr(e + 1)));
    std::string out = sign;
    if (exp10 < -4 || exp10 >= 16) {
        out += digits[0];
        if (digits.size() > 1) out += "." + digits.substr(1);
        char ebuf[16];
        std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
        out += ebuf;
    } else if (exp10 >= 0) {
        const size_t int_len = static_cast<size_t>(exp10) + 1;
        if (digits.size() <= int_len) {
            out += digits + std::string(int_len - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, int_len) + "." + digits.substr(int_len);
        }
    } else {
        out += "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
    }
    return out;
}

std::string python_json_dumps(const Json& value) {
    std::string out;
    dump(out, value);
    return out;
}

Json parse_python_json(std::string_view text) {
    if (auto at = json_too_deep_at(text))
        throw JsonSyntaxError{*at, "invalid JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
    // Pre-pass: outside strings, replace the three bare tokens by sentinel
    // strings. map[] keeps output positions traceable to input positions.
    std::string rewritten;
    rewritten.reserve(text.size());
    std::vector<size_t> map;
    map.reserve(text.size());
    bool in_string = false;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (in_string) {
            rewritten += c;
            map.push_back(i);
            if (c == '\\' && i + 1 < text.size()) {
                rewritten += text[i + 1];
                map.push_back(i + 1);
                i += 2;
                continue;
            }
            if (c == '"') in_string = false;
            ++i;
            continue;
        }
        std::string_view token, sentinel;
        if (text.substr(i, 3) == "NaN") token = "NaN", sentinel = kNaN;
        else if (text.substr(i, 8) == "Infinity") token = "Infinity", sentinel = kPosInf;
        else if (text.substr(i, 9) == "-Infinity") token = "-Infinity", sentinel = kNegInf;
        if (!token.empty()) {
            // The sentinel's \x01 bytes are written as JSON escapes.
            std::string literal = "\"\\u0001" + std::string(sentinel.substr(1, sentinel.size() - 2)) + "\\u0001\"";
            rewritten += literal;
            map.insert(map.end(), literal.size(), i);
            i += token.size();
            continue;
        }
        if (c == '"') in_string = true;
        rewritten += c;
        map.push_back(i);
        ++i;
    }
    try {
        Json v = Json::parse(rewritten);
        replace_sentinels(v);
        return v;
    } catch (const nlohmann::json::parse_error& e) {
        const size_t pos = e.byte > 0 ? e.byte - 1 : 0;
        const size_t in_pos = pos < map.size() ? map[pos] : text.size();
        std::string reason = e.what();
        // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column N: "
        if (auto k = reason.find(": "); k != std::string::npos) {
            if (auto k2 = reason.find(": ", k + 2); k2 != std::string::npos) reason = reason.substr(k2 + 2);
        }
        throw JsonSyntaxError{in_pos, "invalid JSON: " + reason};
    } catch (const nlohmann::json::out_of_range& e) {
        // A number beyond double's range (406, "1e999") is no parse_error and
        // carries no position.
        throw JsonSyntaxError{0, std::string("invalid JSON: ") + e.what()};
    }
}

}  // namespace ncafs::ds
