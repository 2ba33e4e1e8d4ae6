// One-pass JSON parsing (nlohmann SAX) that never holds one big list: the
// elements of the list under `list_key` in the root object are built one at a
// time as FlatJson (no tree, no allocation once warm), handed to a callback
// and dropped, so memory stays proportional to one element (a
// million-partition Partitions list costs no tree). Everything else is built
// into an ordinary tree, where the list itself appears as an empty array.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "aggregation/json/flat_json.hpp"

namespace ncafs::agg {

struct StreamedList {
    bool seen = false;    // the root object had the key, holding a list
    uint64_t count = 0;   // elements handed to the callback
    bool repeated = false;  // the key appeared again after the list: ignored, reported here
};

// on_start sees the tree built so far (the keys before the list) when the
// list opens; on_element then sees each element (valid during the call).
// Throws what nlohmann::json::parse throws on bad text (parse_error with its
// byte position, out_of_range for huge numbers); exceptions from the
// callbacks pass through.
struct StreamCallbacks {
    std::function<void(const nlohmann::json& root_so_far)> on_start;
    std::function<void(uint64_t index, FlatJson::Ref element)> on_element;
};
nlohmann::json parse_json_streaming(std::string_view text, const std::string& list_key, const StreamCallbacks& callbacks,
                                    StreamedList& list);

// The same through simdjson (simdjson_sax_reader.hpp), several times faster;
// `allocated` bytes from text.data() may be read (simdjson reads past the
// end; fewer than text.size() + SIMDJSON_PADDING and the text is copied).
// nullopt when simdjson rejects the text or leaves it to nlohmann: the
// callbacks may have seen some elements by then, and the caller starts over
// with parse_json_streaming (which reads it or throws nlohmann's error).
std::optional<nlohmann::json> parse_json_streaming_simdjson(std::string_view text, size_t allocated,
                                                            const std::string& list_key,
                                                            const StreamCallbacks& callbacks, StreamedList& list);

}  // namespace ncafs::agg
