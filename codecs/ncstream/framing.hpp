// The part of ncstream outside protobuf: the four-byte magic numbers that
// introduce each message and the unsigned LEB128 varints (vlenb/vlenn) that
// give byte and object counts (docs/formats/ncstream.md, "The format in short").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ncafs::ncstream {

using Magic = std::array<uint8_t, 4>;

inline constexpr Magic kMagicStart = {0x43, 0x44, 0x46, 0x53};   // "CDFS", files only
inline constexpr Magic kMagicHeader = {0xad, 0xec, 0xce, 0xda};
inline constexpr Magic kMagicData = {0xab, 0xec, 0xce, 0xba};    // v1 data message
inline constexpr Magic kMagicData2 = {0xab, 0xeb, 0xbe, 0xba};   // v2 (DataCol), never written by us
inline constexpr Magic kMagicVData = {0xab, 0xef, 0xfe, 0xba};
inline constexpr Magic kMagicVEnd = {0xed, 0xef, 0xfe, 0xda};
inline constexpr Magic kMagicErr = {0xab, 0xad, 0xba, 0xda};
inline constexpr Magic kMagicEnd = {0xed, 0xed, 0xde, 0xde};

// Java readers hold every vlenb in an int: one block must stay below 2^31 bytes.
inline constexpr uint64_t kMaxJavaBlock = (uint64_t{1} << 31) - 1;

// Bytes of the minimal varint encoding of v (1..10).
size_t varint_size(uint64_t v);
// Writes the minimal encoding of v at out (varint_size(v) bytes); returns the count.
size_t encode_varint(uint64_t v, uint8_t* out);
void append_varint(std::string& out, uint64_t v);

// Outcome of decoding a varint from a byte window.
struct VarintResult {
    enum class Status { Ok, NeedMore, TooLarge } status = Status::NeedMore;
    uint64_t value = 0;
    size_t length = 0;  // bytes consumed when Ok
};
// Decodes a varint from the start of bytes. TooLarge when the value would
// reach 2^63 (no count in a real file comes near; a bigger one is hostile);
// NeedMore when bytes ends before the last varint byte.
VarintResult decode_varint(std::span<const uint8_t> bytes);

// Name of a magic for messages ("MAGIC_DATA", ...), or a hex rendering.
std::string describe_magic(std::span<const uint8_t, 4> m);
bool magic_equals(std::span<const uint8_t, 4> m, const Magic& want);

}  // namespace ncafs::ncstream
