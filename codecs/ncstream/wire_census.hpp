// The objects a protobuf message will make when parsed, counted on its wire
// bytes before protobuf builds any: every sub-message, every element of a
// repeated field. A 2-byte empty sub-message becomes an object of some
// hundred bytes, so a header's memory follows this count, not its length.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace google::protobuf {
class Descriptor;
}

namespace ncafs::ncstream {

// Objects `bytes` (a message of type `type`) makes, or the first count past
// `enough` (the walk stops there: nothing beyond would be allowed); nullopt
// when the bytes are not well-formed protobuf or nest deeper than protobuf's
// own limit (100) (the parse that follows refuses them).
std::optional<uint64_t> count_wire_objects(std::string_view bytes, const google::protobuf::Descriptor& type,
                                           uint64_t enough = UINT64_MAX);

}  // namespace ncafs::ncstream
