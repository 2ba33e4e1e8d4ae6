// Parsing the JSON of nca_array / cfa_array. Real writers (cf-python,
// S3netCDF4) emit strict JSON; every published example uses Python-literal
// pseudo-JSON with single-quoted strings. Strict first, then a small pre-pass
// that turns single-quoted strings into double-quoted ones (and Python's
// True/False/None into JSON's). Anything else is reported, never guessed.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ncafs::agg {

// Throws JsonTextError with the 0-based character position (in `text`) where
// parsing failed and the parser's reason.
nlohmann::json parse_lenient_json(const std::string& text);

// The same with `parse` doing the parsing (a streaming parser): called on the
// text and, should it throw nlohmann's parse_error, again on the re-quoted text.
using JsonParser = std::function<nlohmann::json(std::string_view text)>;
nlohmann::json parse_lenient_json_with(std::string_view text, const JsonParser& parse);

struct JsonTextError {
    size_t position;
    std::string reason;
};

// Exposed for tests: the single-quote pre-pass; map[i] is the position in the
// input of output character i.
std::string single_quotes_to_json(std::string_view text, std::vector<size_t>* map);

}  // namespace ncafs::agg
