// Walks JSON text with simdjson's On-Demand API (Debian's libsimdjson: its
// SIMD indexing pass picked at run time) and calls the same SAX handler
// methods, in the same order and with the same value kinds, as
// nlohmann::json::sax_parse on the same text: integers as number_integer
// (with '-') or number_unsigned, integers beyond 64 bits and anything with
// '.', 'e' or 'E' as number_float.
// read() returns false, having handed on only part of the events, when
// simdjson rejects the text or the text needs what this walk leaves to
// nlohmann (a scalar as the whole text, a raw control byte in a string):
// the caller then starts over with nlohmann, which reads it or words the
// error. simdjson reads up to SIMDJSON_PADDING bytes past the text: the
// caller says how many bytes from text.data() may be read (`allocated`);
// with too few the text is copied once into a padded buffer. Nesting depth
// is the caller's to bound (json_too_deep_at: 256; simdjson's limit is 1024).
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace ncafs::agg {

template <class Sax>
class SimdjsonSaxReader {
public:
    SimdjsonSaxReader(std::string_view text, size_t allocated, Sax& sax) : t_(text), allocated_(allocated), sax_(sax) {}

    bool read() {
        namespace od = simdjson::ondemand;
        simdjson::padded_string copy;
        simdjson::padded_string_view view(t_.data(), t_.size(), allocated_);
        if (allocated_ < t_.size() || view.padding() < simdjson::SIMDJSON_PADDING) {
            copy = simdjson::padded_string(t_);
            view = copy;
        }
        od::parser parser;
        od::document doc;
        if (parser.iterate(view).get(doc)) return false;
        od::json_type type;
        if (doc.type().get(type)) return false;
        if (type != od::json_type::object && type != od::json_type::array) return false;  // a scalar: nlohmann's
        od::value root;
        if (doc.get_value().get(root) || !value(root)) return false;
        const char* after;  // past the last token: nothing trails the root
        return doc.current_location().get(after) == simdjson::OUT_OF_BOUNDS;
    }

private:
    using Value = simdjson::ondemand::value;

    bool value(Value v) {
        simdjson::ondemand::json_type type;
        if (v.type().get(type)) return false;
        switch (type) {
            case simdjson::ondemand::json_type::object: return object(v);
            case simdjson::ondemand::json_type::array: return array(v);
            case simdjson::ondemand::json_type::string: return string(v);
            case simdjson::ondemand::json_type::number: return number(v);
            case simdjson::ondemand::json_type::boolean: {
                bool b;
                return !v.get_bool().get(b) && sax_.boolean(b);
            }
            case simdjson::ondemand::json_type::null: {
                bool is_null;
                return !v.is_null().get(is_null) && is_null && sax_.null();
            }
        }
        return false;
    }

    bool object(Value v) {
        simdjson::ondemand::object o;
        if (v.get_object().get(o)) return false;
        sax_.start_object(static_cast<std::size_t>(-1));
        for (auto member : o) {
            simdjson::ondemand::field f;
            if (std::move(member).get(f)) return false;
            const char* raw = f.key().raw();  // just past the opening quote
            std::string_view k;
            const Scan scan = scan_string(raw, k);
            if (scan == Scan::Control ||
                (scan == Scan::Escaped && (f.unescaped_key().get(k) || !no_raw_control_bytes(k, raw))))
                return false;
            buf_.assign(k);
            sax_.key(buf_);
            if (!value(f.value())) return false;
        }
        return sax_.end_object();
    }

    bool array(Value v) {
        simdjson::ondemand::array a;
        if (v.get_array().get(a)) return false;
        sax_.start_array(static_cast<std::size_t>(-1));
        for (auto element : a) {
            Value e;
            if (std::move(element).get(e) || !value(e)) return false;
        }
        return sax_.end_array();
    }

    bool string(Value v) {
        const char* raw = v.raw_json_token().data() + 1;  // just past the opening quote; not consumed
        std::string_view s;
        const Scan scan = scan_string(raw, s);
        simdjson::ondemand::raw_json_string consumed;  // consumed all the same: skipped values go unchecked
        if (scan == Scan::Control ||
            (scan == Scan::EscapeFree ? v.get_raw_json_string().get(consumed) != 0
                                      : v.get_string().get(s) || !no_raw_control_bytes(s, raw)))
            return false;
        buf_.assign(s);
        return sax_.string(buf_);
    }

    // A string without escapes is its raw bytes (stage 1 checked their
    // UTF-8 and that the string closes): read in place, it costs simdjson's
    // string buffer nothing (unescaping writes every string there, as much
    // again as the text). One look at each byte up to the closing quote.
    enum class Scan { EscapeFree, Escaped, Control };
    static Scan scan_string(const char* raw, std::string_view& in_place) {
        for (const char* p = raw;; ++p) {
            const auto c = static_cast<unsigned char>(*p);
            if (c == '"') return in_place = {raw, static_cast<size_t>(p - raw)}, Scan::EscapeFree;
            if (c == '\\') return Scan::Escaped;  // simdjson unescapes
            if (c < 0x20) return Scan::Control;   // not JSON; simdjson lets it through, nlohmann words it
        }
    }

    static void trim_space(std::string_view& token) {
        while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                                  token.back() == '\t'))
            token.remove_suffix(1);
    }

    // An escaped string: raw control bytes are not JSON (simdjson lets them
    // through); only strings that hold one after unescaping (an escaped "\n"
    // also gives one) have their raw text looked at again.
    static bool no_raw_control_bytes(std::string_view unescaped, const char* raw) {
        bool control = false;
        for (const char c : unescaped) control |= static_cast<unsigned char>(c) < 0x20;
        if (!control) return true;
        for (; *raw != '"'; ++raw) {
            if (*raw == '\\') ++raw;  // the escaped byte, whatever it is
            else if (static_cast<unsigned char>(*raw) < 0x20) return false;
        }
        return true;
    }

    // Classified by its text as nlohmann's lexer does; simdjson's conversions
    // are exact (correctly rounded doubles, as strtod).
    bool number(Value v) {
        std::string_view token = v.raw_json_token();  // up to the next structural byte
        trim_space(token);
        bool integer = true;  // (find_first_of costs a memchr a byte)
        for (const char c : token) integer &= c != '.' && c != 'e' && c != 'E';
        if (integer) {
            if (token.front() == '-') {
                int64_t i;
                if (!v.get_int64().get(i)) return sax_.number_integer(i);
            } else {
                uint64_t u;
                if (!v.get_uint64().get(u)) return sax_.number_unsigned(u);
            }
        }
        double d;  // a fraction, an exponent, or an integer beyond 64 bits (as nlohmann: a float)
        if (v.get_double().get(d)) return false;
        num_text_.assign(token);
        return sax_.number_float(d, num_text_);
    }

    std::string_view t_;
    size_t allocated_;
    Sax& sax_;
    std::string buf_;
    std::string num_text_;
};

}  // namespace ncafs::agg
