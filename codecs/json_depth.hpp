// Nesting-depth guard run on JSON text before it is parsed. nlohmann's
// dump(), our tree walks and the destructors of deep documents recurse once
// per level, so a document nested 100,000 deep would overflow the stack: it
// is refused first, by a linear bracket scan that skips quoted strings.
#pragma once

#include <cstddef>
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

}  // namespace ncafs
