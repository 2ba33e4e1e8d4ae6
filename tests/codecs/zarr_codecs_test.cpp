// codecs/zarr: dtypes both ways, .zarray checks (overflow, bounds, order F,
// unknown codecs), and the codec chain: chunks encoded by the libraries'
// own encoders decode to the values; bombs stop at the chunk's size.
#include <blosc.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "codecs/zarr/base64.hpp"
#include "codecs/zarr/zarr_array.hpp"
#include "codecs/zarr/zarr_codecs.hpp"
#include "codecs/zarr/zarr_dtype.hpp"

namespace ncafs::zarr {
namespace {

using json = nlohmann::json;

json zarray(json shape, json chunks, const std::string& dtype, json compressor = nullptr, json filters = nullptr) {
    return {{"zarr_format", 2}, {"shape", shape}, {"chunks", chunks}, {"dtype", dtype}, {"fill_value", nullptr},
            {"order", "C"}, {"compressor", compressor}, {"filters", filters}};
}

std::vector<uint8_t> bytes_of(const std::vector<int32_t>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

std::vector<int32_t> ramp(size_t n) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), -7);
    return v;
}

std::vector<uint8_t> zlib_encode(const std::vector<uint8_t>& raw) {
    uLongf n = compressBound(raw.size());
    std::vector<uint8_t> out(n);
    EXPECT_EQ(compress2(out.data(), &n, raw.data(), raw.size(), 6), Z_OK);
    out.resize(n);
    return out;
}

TEST(ZarrDtype, BothWays) {
    std::string why;
    for (NcType t : kAllTypes)
        for (bool big : {false, true}) {
            auto d = parse_zarr_dtype(zarr_dtype_of(t, big), why);
            ASSERT_TRUE(d) << why;
            EXPECT_EQ(d->type, t);
            EXPECT_EQ(d->big_endian, big && type_size(t) > 1);
        }
    EXPECT_EQ(zarr_dtype_of(NcType::Float, false), "<f4");
    EXPECT_EQ(zarr_dtype_of(NcType::Short, true), ">i2");
    EXPECT_EQ(zarr_dtype_of(NcType::UByte, true), "|u1");
    EXPECT_EQ(zarr_dtype_of(NcType::Char, false), "|S1");
    EXPECT_EQ(parse_zarr_dtype("|b1", why)->type, NcType::Byte);
    for (const char* refused : {"<f2", "<c8", "|S4", "<U1", "<i4x", "f4", "|i2", "<M8", ""})
        EXPECT_FALSE(parse_zarr_dtype(refused, why)) << refused;
}

TEST(ZarrArray, ChecksSizesAndFields) {
    const ZarrArray a = parse_zarray(zarray({5, 7}, {2, 3}, "<i4"));
    EXPECT_EQ(a.chunk_grid, (std::vector<uint64_t>{3, 3}));
    EXPECT_EQ(a.chunk_bytes, 24u);
    EXPECT_EQ(chunk_key(a, {2, 1}), "2.1");
    EXPECT_EQ(chunk_key(parse_zarray(zarray(json::array(), json::array(), "<f8")), {}), "0");
    // Overflowing and oversized shapes and chunks are refused before any allocation.
    EXPECT_THROW(parse_zarray(zarray({uint64_t{1} << 62, 1 << 20}, {1, 1}, "<f8")), std::runtime_error);
    EXPECT_THROW(parse_zarray(zarray({1 << 20}, {uint64_t{1} << 40}, "<f8")), std::runtime_error);
    EXPECT_THROW(parse_zarray(zarray({4}, {0}, "<f8")), std::runtime_error);
    EXPECT_THROW(parse_zarray(zarray({4, 4}, {4}, "<f8")), std::runtime_error);
    EXPECT_THROW(parse_zarray(zarray({-4}, {4}, "<f8")), std::runtime_error);
    json f = zarray({4}, {4}, "<f8");
    f["order"] = "F";
    try {
        parse_zarray(f);
        FAIL() << "order F accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("order \"F\""), std::string::npos) << e.what();
    }
    try {
        parse_zarray(zarray({4}, {4}, "<f8", {{"id", "bz2"}}));
        FAIL() << "bz2 accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("\"bz2\""), std::string::npos) << e.what();
    }
}

TEST(ZarrArray, FillValues) {
    json z = zarray({4}, {4}, "<f4");
    z["fill_value"] = "NaN";
    float f;
    std::memcpy(&f, parse_zarray(z).fill->data(), 4);
    EXPECT_TRUE(std::isnan(f));
    z["fill_value"] = "-Infinity";
    std::memcpy(&f, parse_zarray(z).fill->data(), 4);
    EXPECT_EQ(f, -INFINITY);
    z = zarray({4}, {4}, ">i2");
    z["fill_value"] = -999;
    int16_t s;
    std::memcpy(&s, parse_zarray(z).fill->data(), 2);
    EXPECT_EQ(s, -999);  // native order: the source swaps to the dtype's
    z["fill_value"] = 70000;
    EXPECT_THROW(parse_zarray(z), std::runtime_error);
    z["fill_value"] = nullptr;
    EXPECT_FALSE(parse_zarray(z).fill);
    z = zarray({4}, {4}, "<i8");
    z["fill_value"] = INT64_MIN;
    int64_t l;
    std::memcpy(&l, parse_zarray(z).fill->data(), 8);
    EXPECT_EQ(l, INT64_MIN);
}

TEST(ZarrCodecs, EachCompressorDecodes) {
    const auto values = ramp(1000);
    const auto raw = bytes_of(values);
    // zlib (also as a filter, as kerchunk writes it), zstd, lz4 (numcodecs framing), blosc.
    EXPECT_EQ(decode_chunk(zlib_encode(raw), parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "zlib"}}))), raw);
    EXPECT_EQ(decode_chunk(zlib_encode(raw), parse_zarray(zarray({1000}, {1000}, "<i4", nullptr, {{{"id", "zlib"}}}))),
              raw);
    std::vector<uint8_t> z(ZSTD_compressBound(raw.size()));
    z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 3));
    EXPECT_EQ(decode_chunk(z, parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "zstd"}}))), raw);
    std::vector<uint8_t> l(4 + LZ4_compressBound(static_cast<int>(raw.size())));
    const uint32_t n = static_cast<uint32_t>(raw.size());
    std::memcpy(l.data(), &n, 4);
    l.resize(4 + LZ4_compress_default(reinterpret_cast<const char*>(raw.data()), reinterpret_cast<char*>(l.data() + 4),
                                      static_cast<int>(raw.size()), static_cast<int>(l.size() - 4)));
    EXPECT_EQ(decode_chunk(l, parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "lz4"}}))), raw);
    for (const char* cname : {"lz4", "zstd", "zlib", "blosclz"}) {
        std::vector<uint8_t> b(raw.size() + BLOSC_MAX_OVERHEAD);
        const int size = blosc_compress_ctx(5, BLOSC_SHUFFLE, 4, raw.size(), raw.data(), b.data(), b.size(), cname, 0, 1);
        ASSERT_GT(size, 0) << cname;
        b.resize(static_cast<size_t>(size));
        EXPECT_EQ(decode_chunk(b, parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "blosc"}, {"cname", cname}}))), raw)
            << cname;
    }
}

TEST(ZarrCodecs, Filters) {
    // shuffle: byte j of every element together (numcodecs / HDF5 layout).
    const auto values = ramp(6);
    const auto raw = bytes_of(values);
    std::vector<uint8_t> shuffled(raw.size());
    for (size_t i = 0; i < 6; ++i)
        for (size_t j = 0; j < 4; ++j) shuffled[j * 6 + i] = raw[i * 4 + j];
    EXPECT_EQ(decode_chunk(shuffled, parse_zarray(zarray({6}, {6}, "<i4", nullptr, {{{"id", "shuffle"}, {"elementsize", 4}}}))),
              raw);
    // delta: differences; the first element as it is.
    std::vector<int32_t> diffs(values.size());
    std::adjacent_difference(values.begin(), values.end(), diffs.begin());
    EXPECT_EQ(decode_chunk(bytes_of(diffs),
                           parse_zarray(zarray({6}, {6}, "<i4", nullptr, {{{"id", "delta"}, {"dtype", "<i4"}}}))),
              raw);
    // fixedscaleoffset: u1 stored (x - offset) * scale -> f8.
    const std::vector<uint8_t> stored{0, 5, 10, 255};
    const auto decoded = decode_chunk(
        stored, parse_zarray(zarray({4}, {4}, "<f8", nullptr,
                                    {{{"id", "fixedscaleoffset"}, {"offset", -1}, {"scale", 10}, {"dtype", "<f8"}, {"astype", "|u1"}}})));
    ASSERT_EQ(decoded.size(), 32u);
    double d[4];
    std::memcpy(d, decoded.data(), 32);
    EXPECT_DOUBLE_EQ(d[0], -1.0);
    EXPECT_DOUBLE_EQ(d[1], -0.5);
    EXPECT_DOUBLE_EQ(d[3], 24.5);
    // Filters chained after a compressor (filters [shuffle, zlib], decoded in reverse).
    EXPECT_EQ(decode_chunk(zlib_encode(shuffled),
                           parse_zarray(zarray({6}, {6}, "<i4", nullptr,
                                               {{{"id", "shuffle"}, {"elementsize", 4}}, {{"id", "zlib"}}}))),
              raw);
}

TEST(ZarrCodecs, CompressorChainsAreBounded) {
    const auto raw = bytes_of(ramp(1000));
    // zlib inside zlib: the inner stream's size is bounded, not known.
    const ZarrArray twice = parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "zlib"}}, {{{"id", "zlib"}}}));
    EXPECT_EQ(decode_chunk(zlib_encode(zlib_encode(raw)), twice), raw);
    // A chain that decodes to more than the chunk is refused.
    EXPECT_THROW(decode_chunk(zlib_encode(zlib_encode(std::vector<uint8_t>(8 << 20))), twice), std::runtime_error);
    json many = json::array();
    for (int i = 0; i < 9; ++i) many.push_back({{"id", "shuffle"}, {"elementsize", 4}});
    EXPECT_THROW(parse_zarray(zarray({1000}, {1000}, "<i4", nullptr, many)), std::runtime_error);
}

TEST(ZarrCodecs, WrongSizesAndBombsAreRefused) {
    const ZarrArray small = parse_zarray(zarray({1024}, {1024}, "<i4"));  // 4 KiB chunks
    EXPECT_THROW(decode_chunk(std::vector<uint8_t>(4095), small), std::runtime_error);  // no codec: exact size
    const std::vector<uint8_t> big(16 << 20);  // 16 MiB of zeros: each bomb must stop at 4 KiB
    auto refuses = [&](const std::vector<uint8_t>& stored, const char* id) {
        try {
            decode_chunk(stored, parse_zarray(zarray({1024}, {1024}, "<i4", {{"id", id}})));
            ADD_FAILURE() << id << " bomb decoded";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(id), std::string::npos) << e.what();
        }
    };
    refuses(zlib_encode(big), "zlib");
    std::vector<uint8_t> z(ZSTD_compressBound(big.size()));
    z.resize(ZSTD_compress(z.data(), z.size(), big.data(), big.size(), 1));
    refuses(z, "zstd");
    // A zstd frame without a declared size: stopped by the output bound.
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    std::vector<uint8_t> zs(ZSTD_compressBound(big.size()));
    zs.resize(ZSTD_compress2(cctx, zs.data(), zs.size(), big.data(), big.size()));
    ZSTD_freeCCtx(cctx);
    refuses(zs, "zstd");
    std::vector<uint8_t> b(big.size() + BLOSC_MAX_OVERHEAD);
    b.resize(static_cast<size_t>(blosc_compress_ctx(9, 1, 4, big.size(), big.data(), b.data(), b.size(), "lz4", 0, 1)));
    refuses(b, "blosc");
    std::vector<uint8_t> l{0, 0, 0, 1, 0};  // declares 16 MiB
    refuses(l, "lz4");
    // Truncated and corrupt data.
    auto half = zlib_encode(bytes_of(ramp(1024)));
    half.resize(half.size() / 2);
    refuses(half, "zlib");
    std::vector<uint8_t> blosc_header(16, 0xff);  // declares more compressed bytes than stored
    refuses(blosc_header, "blosc");
    // A chunk that decodes short of its size.
    refuses(zlib_encode(std::vector<uint8_t>(100)), "zlib");
}

TEST(Base64, RoundTripAndRefusals) {
    for (size_t n = 0; n < 10; ++n) {
        std::vector<uint8_t> v(n);
        std::iota(v.begin(), v.end(), uint8_t{250});
        EXPECT_EQ(base64_decode(base64_encode(v)), v) << n;
    }
    EXPECT_EQ(base64_encode(std::vector<uint8_t>{'h', 'i'}), "aGk=");
    for (const char* bad : {"a", "aGk", "a=Gk", "aG!=", "===="}) EXPECT_FALSE(base64_decode(bad)) << bad;
}

}  // namespace
}  // namespace ncafs::zarr
