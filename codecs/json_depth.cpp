#include "codecs/json_depth.hpp"

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

}  // namespace ncafs
