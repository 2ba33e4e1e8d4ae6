// Nesting-depth guard run on JSON text before it is parsed. nlohmann's
// dump(), our tree walks and the destructors of deep documents recurse once
// per level, so a document nested 100,000 deep would overflow the stack: it
// is refused first, by a linear bracket scan that skips quoted strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ncafs {

// Documented limit (docs/security.md "Hostile input"): arrays/objects nested deeper are refused.
constexpr size_t kMaxJsonDepth = 256;

// Position of the first '[' or '{' (outside strings) that opens level
// max_depth + 1, or nullopt when the text stays within max_depth. With
// single_quotes, '...' strings are skipped too (the pseudo-JSON of NCA).
std::optional<size_t> json_too_deep_at(std::string_view text, size_t max_depth = kMaxJsonDepth,
                                       bool single_quotes = false);

// Bytes a parsed tree of `text` (nlohmann::json) takes at most: per value
// its slot, per object member a map node and key, per array or object its
// container, plus the text; found by one scan, before anything is parsed.
uint64_t parsed_json_bytes(std::string_view text);

// Charges parsed_json_bytes(text) to the file's metadata budget
// (io/metadata_budget.hpp) as "bytes of WHAT, parsed": refused before parsing.
void charge_parsed_json(std::string_view text, const char* what);

}  // namespace ncafs
