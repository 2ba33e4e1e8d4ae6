// The values of one variable of a ds file, read by pread from its block.
// Numbers in the block's byte order, bool bits as byte 0/1, strings as a
// char array padded with NUL to the string-length dimension; masked
// elements (and padding of masked strings) read as the fill value.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/ds/ds_types.hpp"

namespace ncafs::ds {

struct DsBlockInfo {
    std::string variable;     // for messages
    DsType type = DsType::Float64;
    std::vector<uint64_t> ds_shape;  // .size
    uint64_t elements = 0;           // N = product of ds_shape
    bool little_endian = false;
    bool has_mask = false;
    uint64_t block_offset = 0;  // absolute file offset of the block
    uint64_t block_length = 0;  // .len
    std::array<uint8_t, 8> fill{};  // one element of the netCDF type, native order
    uint64_t string_length = 0;     // strings: the char dimension (>= 1)
};

class DsArraySource : public ArraySource {
public:
    // For strings (and small masks) scans the block now: checks it against
    // .len and learns the longest string. Throws FormatError.
    DsArraySource(std::shared_ptr<const OpenFile> file, DsBlockInfo info);

    NcType type() const override { return nc_type_for(info_.type); }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override;

    // Longest string in bytes (strings only).
    uint64_t longest_string() const { return longest_string_; }

private:
    // ds elements [a, b) into out as native elements of type() (strings:
    // string_length chars each).
    void read_ds_linear(uint64_t a, uint64_t b, uint8_t* out) const;
    uint64_t rank(uint64_t i) const;  // kept elements before element i
    void build_rank_checkpoints() const;
    // Byte offset (from the string data start) of stored string k.
    uint64_t string_offset(uint64_t k, std::vector<uint64_t>& lengths_out, uint64_t count) const;
    uint64_t read_length_word(const uint8_t* p) const;
    [[noreturn]] void fail(uint64_t offset, const std::string& reason) const;

    std::shared_ptr<const OpenFile> file_;
    DsBlockInfo info_;
    std::vector<uint64_t> shape_;
    uint64_t mask_bytes_ = 0;
    uint64_t values_offset_ = 0;  // absolute: after the mask

    mutable std::once_flag rank_once_;
    mutable std::vector<uint64_t> rank_checkpoints_;  // kept before each kRankStride elements
    mutable uint64_t kept_total_ = 0;

    // Strings: byte offsets of every kStringStride-th stored string.
    std::vector<uint64_t> string_checkpoints_;
    uint64_t longest_string_ = 0;
};

}  // namespace ncafs::ds
