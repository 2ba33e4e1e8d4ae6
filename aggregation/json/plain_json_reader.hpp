// A reader for the plain JSON that real NCA/CFA writers emit, several times
// faster than nlohmann's lexer on a million-partition list: strings without
// escapes, control or non-ASCII bytes; integers of at most 18 digits; true,
// false, null; objects and arrays. It calls the same SAX handler methods, in
// the same order, as nlohmann::json::sax_parse would on such text; on
// anything else (or bad text) it stops and returns false, and the caller
// starts over with nlohmann (which gives the same values, or its error with
// its position). Nesting depth is the caller's to bound (json_too_deep_at).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ncafs::agg {

template <class Sax>
class PlainJsonReader {
public:
    PlainJsonReader(std::string_view text, Sax& sax) : t_(text), sax_(sax) {}

    // True when the whole text was one plain JSON value, every event handed on.
    bool read() {
        for (;;) {
            if (!value()) return false;
            if (!after_value()) return false;
            if (stack_.empty()) return done_;
        }
    }

private:
    void ws() {
        while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
    }
    bool at(char c) const { return i_ < t_.size() && t_[i_] == c; }

    // A string at t_[i_] == '"' into buf_, plain bytes only.
    bool string() {
        const size_t start = ++i_;
        while (i_ < t_.size()) {
            const auto c = static_cast<unsigned char>(t_[i_]);
            if (c == '"') {
                buf_.assign(t_.substr(start, i_ - start));
                ++i_;
                return true;
            }
            if (c == '\\' || c < 0x20 || c >= 0x80) return false;
            ++i_;
        }
        return false;
    }
    bool number() {
        const bool negative = at('-');
        if (negative) ++i_;
        const size_t first = i_;
        uint64_t v = 0;
        while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') v = v * 10 + static_cast<uint64_t>(t_[i_++] - '0');
        const size_t digits = i_ - first;
        if (digits == 0 || digits > 18 || (digits > 1 && t_[first] == '0')) return false;
        if (at('.') || at('e') || at('E')) return false;  // floats: nlohmann's own conversion
        if (!negative) return sax_.number_unsigned(v);
        if (v == 0) return false;  // "-0": left to nlohmann
        return sax_.number_integer(-static_cast<int64_t>(v));
    }
    bool literal(std::string_view word) {
        if (t_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }
    // An object's key and its colon.
    bool key() {
        ws();
        if (!at('"') || !string()) return false;
        sax_.key(buf_);
        ws();
        if (!at(':')) return false;
        ++i_;
        return true;
    }
    // One value, or the opening of a container (its first key read).
    bool value() {
        ws();
        if (i_ >= t_.size()) return false;
        const char c = t_[i_];
        if (c == '{' || c == '[') {
            ++i_;
            c == '{' ? sax_.start_object(static_cast<std::size_t>(-1)) : sax_.start_array(static_cast<std::size_t>(-1));
            ws();
            if (at(c == '{' ? '}' : ']')) {  // empty
                ++i_;
                c == '{' ? sax_.end_object() : sax_.end_array();
                return true;
            }
            stack_.push_back(c);
            return c == '[' || key() ? (pending_ = true, true) : false;
        }
        if (c == '"') return string() && sax_.string(buf_);
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        if (c == 't') return literal("true") && sax_.boolean(true);
        if (c == 'f') return literal("false") && sax_.boolean(false);
        if (c == 'n') return literal("null") && sax_.null();
        return false;
    }
    // After a value: commas and closings, until the next value is due or the root ends.
    bool after_value() {
        if (pending_) {  // a container just opened: its first value is due
            pending_ = false;
            return true;
        }
        for (;;) {
            ws();
            if (stack_.empty()) {
                done_ = i_ == t_.size();
                return done_;
            }
            if (at(',')) {
                ++i_;
                return stack_.back() == '[' || key();
            }
            if (at(stack_.back() == '{' ? '}' : ']')) {
                ++i_;
                const char open = stack_.back();
                stack_.pop_back();
                open == '{' ? sax_.end_object() : sax_.end_array();
                continue;
            }
            return false;
        }
    }

    std::string_view t_;
    Sax& sax_;
    size_t i_ = 0;
    std::vector<char> stack_;  // open containers: '{' or '['
    std::string buf_;
    bool pending_ = false;
    bool done_ = false;
};

}  // namespace ncafs::agg
