#include "aggregation/json/lenient_json.hpp"

#include <cctype>

#include "codecs/json_depth.hpp"

namespace ncafs::agg {

std::string single_quotes_to_json(std::string_view in, std::vector<size_t>* map) {
    std::string out;
    out.reserve(in.size() + 16);
    auto put = [&](char c, size_t from) {
        out.push_back(c);
        if (map) map->push_back(from);
    };
    size_t i = 0;
    while (i < in.size()) {
        char c = in[i];
        if (c == '"') {  // a double-quoted string: copy verbatim, honouring escapes
            put(c, i++);
            while (i < in.size() && in[i] != '"') {
                if (in[i] == '\\' && i + 1 < in.size()) put(in[i], i), ++i;
                put(in[i], i);
                ++i;
            }
            if (i < in.size()) put(in[i], i), ++i;
        } else if (c == '\'') {  // a single-quoted string: re-quote
            put('"', i++);
            while (i < in.size() && in[i] != '\'') {
                if (in[i] == '\\' && i + 1 < in.size() && in[i + 1] == '\'') {
                    put('\'', i + 1);
                    i += 2;
                    continue;
                }
                if (in[i] == '\\' && i + 1 < in.size()) {
                    put(in[i], i), put(in[i + 1], i + 1);
                    i += 2;
                    continue;
                }
                if (in[i] == '"') put('\\', i);
                put(in[i], i);
                ++i;
            }
            if (i < in.size()) put('"', i++);
        } else if (std::isalpha(static_cast<unsigned char>(c))) {  // bare word: Python literals
            size_t j = i;
            while (j < in.size() && (std::isalnum(static_cast<unsigned char>(in[j])) || in[j] == '_')) ++j;
            std::string word(in.substr(i, j - i));
            std::string repl = word == "True" ? "true" : word == "False" ? "false" : word == "None" ? "null" : word;
            for (size_t k = 0; k < repl.size(); ++k) put(repl[k], i + std::min(k, word.size() - 1));
            i = j;
        } else {
            put(c, i++);
        }
    }
    return out;
}

namespace {

nlohmann::json parse_strict_then_lenient(std::string_view text, const JsonParser& parse) {
    try {
        return parse(text);
    } catch (const nlohmann::json::parse_error& strict) {
        std::string converted = single_quotes_to_json(text, nullptr);
        try {
            return parse(converted);
        } catch (const nlohmann::json::parse_error& lenient) {
            // The position map costs 8 bytes a character: built only to report an error.
            std::vector<size_t> map;
            converted = single_quotes_to_json(text, &map);
            // nlohmann's byte is 1-based: the character that failed.
            size_t at = lenient.byte > 0 ? lenient.byte - 1 : 0;
            size_t pos = map.empty() ? 0 : at < map.size() ? map[at] : text.size();
            std::string reason = lenient.what();
            // Strip nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 3: " prefix.
            if (auto colon = reason.find(": "); colon != std::string::npos) reason = reason.substr(colon + 2);
            throw JsonTextError{pos, "neither JSON nor single-quoted pseudo-JSON: " + reason};
        }
    }
}

}  // namespace

nlohmann::json parse_lenient_json(const std::string& text) {
    return parse_lenient_json_with(text, [](std::string_view t) { return nlohmann::json::parse(t); });
}

nlohmann::json parse_lenient_json_with(std::string_view text, const JsonParser& parse) {
    if (auto at = json_too_deep_at(text, kMaxJsonDepth, true))
        throw JsonTextError{*at, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
    try {
        return parse_strict_then_lenient(text, parse);
    } catch (const nlohmann::json::out_of_range& e) {
        // A number beyond double's range (406, "1e999") is no parse_error and
        // carries no position.
        throw JsonTextError{0, std::string("number out of range: ") + e.what()};
    }
}

}  // namespace ncafs::agg
