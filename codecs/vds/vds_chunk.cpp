#include "codecs/vds/vds_chunk.hpp"

#include <zlib.h>

#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::vds {
namespace {

constexpr size_t kDescriptorSize = 24;
constexpr size_t kRleHeaderSize = 12;

int32_t get_i32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

size_t stored_element_size(Format f) {
    switch (f) {
        case Format::Bit1: case Format::U8: return 1;
        case Format::U16: return 2;
        case Format::R32: case Format::U32: return 4;
        case Format::R64: case Format::U64: return 8;
    }
    return 1;
}

struct Decoder {
    std::span<const uint8_t> object;
    const ChunkShape& shape;
    const std::string& file;
    uint64_t base;
    const std::string& where;

    [[noreturn]] void fail(uint64_t at, const std::string& reason) const {
        throw FormatError(file, base + at, where + ": " + reason);
    }
    void check_descriptor() const {
        if (object.size() < kDescriptorSize) fail(0, "object shorter than its 24-byte descriptor");
        const uint8_t* p = object.data();
        const int32_t dims = get_i32(p), format = get_i32(p + 16), components = get_i32(p + 20);
        std::string got = std::to_string(dims) + "-D " + std::to_string(get_i32(p + 4)) + "x" +
                          std::to_string(get_i32(p + 8)) + "x" + std::to_string(get_i32(p + 12));
        std::string want = std::to_string(shape.dimensionality) + "-D " + std::to_string(shape.size[0]) + "x" +
                           std::to_string(shape.size[1]) + "x" + std::to_string(shape.size[2]);
        if (got != want) fail(0, "descriptor says " + got + ", the layout gives " + want);
        if (format != static_cast<int32_t>(shape.format) || components != 1)
            fail(16, "descriptor format " + std::to_string(format) + "/" + std::to_string(components) +
                         " components disagrees with the channel");
    }
    std::vector<uint8_t> rle(std::span<const uint8_t> in, uint64_t expected) const;
    // zlib's uncompress() never writes past the buffer; a stream that
    // would (or ends short) is refused.
    std::vector<uint8_t> inflate(std::span<const uint8_t> in, uint64_t expected) const {
        std::vector<uint8_t> out(expected + 1);  // one spare byte detects a longer stream
        uLongf produced = static_cast<uLongf>(out.size());
        const int rc = ::uncompress(out.data(), &produced, in.data(), static_cast<uLong>(in.size()));
        if (rc != Z_OK || produced != expected)
            fail(kDescriptorSize, "zlib payload does not inflate to " + std::to_string(expected) + " bytes (zlib code " +
                                      std::to_string(rc) + ")");
        out.resize(expected);
        return out;
    }
};

std::vector<uint8_t> Decoder::rle(std::span<const uint8_t> in, uint64_t expected) const {
    if (in.size() < kRleHeaderSize) fail(kDescriptorSize, "RLE header truncated");
    const int32_t compressed = get_i32(in.data()), original = get_i32(in.data() + 4), unit = get_i32(in.data() + 8);
    if (compressed < static_cast<int32_t>(kRleHeaderSize) || static_cast<uint64_t>(compressed) > in.size())
        fail(kDescriptorSize, "RLE compressed size " + std::to_string(compressed) + " out of range");
    if (original < 0 || static_cast<uint64_t>(original) != expected)
        fail(kDescriptorSize + 4, "RLE original size " + std::to_string(original) + ", expected " + std::to_string(expected));
    const size_t u = static_cast<size_t>(unit);
    if (unit != static_cast<int32_t>(stored_element_size(shape.format))) fail(kDescriptorSize + 8, "RLE unit size " + std::to_string(unit));
    std::vector<uint8_t> out;
    out.reserve(expected);
    size_t at = kRleHeaderSize;
    const size_t end = static_cast<size_t>(compressed);
    while (out.size() < expected) {
        if (at >= end) fail(kDescriptorSize + at, "RLE runs end before the chunk is complete");
        const uint8_t u0 = in[at++];
        size_t len = u0 & 0x3f;
        if (u0 & 0x80) {
            if (at >= end) fail(kDescriptorSize + at, "RLE run length truncated");
            len |= static_cast<size_t>(in[at++]) << 6;
        }
        len += 1;
        if (len * u > expected - out.size()) fail(kDescriptorSize + at, "RLE run overflows the chunk");
        const size_t need = (u0 & 0x40) ? len * u : u;
        if (need > end - at) fail(kDescriptorSize + at, "RLE run data truncated");
        if (u0 & 0x40) {
            out.insert(out.end(), in.begin() + at, in.begin() + at + need);
        } else {
            for (size_t k = 0; k < len; ++k) out.insert(out.end(), in.begin() + at, in.begin() + at + u);
        }
        at += need;
    }
    return out;
}

// 1-bit rows (LSB first, rows padded to bytes) to one byte 0/1 per sample.
std::vector<uint8_t> expand_bits(const std::vector<uint8_t>& packed, const ChunkShape& s) {
    const size_t row_bytes = (static_cast<size_t>(s.size[0]) + 7) / 8;
    const size_t rows = static_cast<size_t>(s.size[1] * s.size[2]);
    std::vector<uint8_t> out(rows * static_cast<size_t>(s.size[0]));
    for (size_t r = 0; r < rows; ++r)
        for (size_t i = 0; i < static_cast<size_t>(s.size[0]); ++i)
            out[r * static_cast<size_t>(s.size[0]) + i] = (packed[r * row_bytes + i / 8] >> (i % 8)) & 1;
    return out;
}

}  // namespace

ChunkStatus status_of_hash(uint64_t hash) {
    if (hash == 0) return {ChunkStatus::Kind::Unwritten, 0};
    if (hash == ~uint64_t{0}) return {ChunkStatus::Kind::NoValue, 0};
    if ((hash >> 32) == 0x01010101u) {
        const auto bits = static_cast<uint32_t>(hash);
        float v;
        std::memcpy(&v, &bits, 4);
        return {ChunkStatus::Kind::Constant, v};
    }
    return {ChunkStatus::Kind::Data, 0};
}

size_t decoded_element_size(Format f) { return stored_element_size(f); }

uint64_t payload_bytes(const ChunkShape& shape) {
    // Stored sizes are below 2^23 each (4096 x a 2-D multiplier <= 1024): no overflow.
    const uint64_t rows = static_cast<uint64_t>(shape.size[1] * shape.size[2]);
    if (shape.format == Format::Bit1) return rows * ((static_cast<uint64_t>(shape.size[0]) + 7) / 8);
    return rows * static_cast<uint64_t>(shape.size[0]) * stored_element_size(shape.format);
}

uint64_t max_object_bytes(const ChunkShape& shape, Compression method) {
    const uint64_t payload = payload_bytes(shape);
    if (method == Compression::None) return kDescriptorSize + payload;
    return kDescriptorSize + kRleHeaderSize + 2 * payload + 4096;
}

std::vector<uint8_t> decode_chunk(std::span<const uint8_t> object, Compression method, const ChunkShape& shape,
                                  const std::string& file, uint64_t object_offset, const std::string& where) {
    Decoder d{object, shape, file, object_offset, where};
    d.check_descriptor();
    const uint64_t expected = payload_bytes(shape);
    if (expected > kMaxChunkBytes)
        d.fail(0, "chunk of " + std::to_string(expected) + " bytes exceeds the 512 MiB limit");
    const auto payload = object.subspan(kDescriptorSize);
    std::vector<uint8_t> packed;
    switch (method) {
        case Compression::None:
            if (payload.size() != expected)
                d.fail(kDescriptorSize, "payload of " + std::to_string(payload.size()) + " bytes, expected " + std::to_string(expected));
            packed.assign(payload.begin(), payload.end());
            break;
        case Compression::Rle:
            packed = d.rle(payload, expected);
            break;
        case Compression::Zip:
            packed = d.inflate(payload, expected);
            break;
        case Compression::Wavelet:
            d.fail(0, "Wavelet compression is not supported");
    }
    return shape.format == Format::Bit1 ? expand_bits(packed, shape) : packed;
}

}  // namespace ncafs::vds
