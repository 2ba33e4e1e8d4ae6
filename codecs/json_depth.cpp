#include "codecs/json_depth.hpp"

#include <string>

#include "io/metadata_budget.hpp"

namespace ncafs {

std::optional<size_t> json_too_deep_at(std::string_view text, size_t max_depth, bool single_quotes) {
    size_t depth = 0;
    char quote = 0;  // the open string's quote character, 0 outside strings
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote) {
            if (c == '\\') ++i;  // the escaped character cannot close the string
            else if (c == quote) quote = 0;
            continue;
        }
        if (c == '"' || (single_quotes && c == '\'')) {
            quote = c;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return std::nullopt;
}

uint64_t parsed_json_bytes(std::string_view text) {
    // nlohmann::json: a 16-byte value, in a vector that may be twice its
    // size; an object member a std::map node with its key; a container its
    // vector or map; each with its allocation's overhead.
    constexpr uint64_t kValue = 48, kMember = 96, kContainer = 64;
    uint64_t values = 1, members = 0, containers = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == ',') {
            ++values;
        } else if (c == ':') {
            ++members;
        } else if (c == '[' || c == '{') {
            ++containers;
            ++values;
        }
    }
    return text.size() + kValue * values + kMember * members + kContainer * containers;
}

void charge_parsed_json(std::string_view text, const char* what) {
    charge_metadata(parsed_json_bytes(text), 1, (std::string("bytes of ") + what + ", parsed").c_str());
}

}  // namespace ncafs
