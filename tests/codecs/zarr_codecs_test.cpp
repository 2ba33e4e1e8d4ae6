// codecs/zarr: dtypes both ways, .zarray checks (overflow, bounds, orders,
// unknown codecs), and the codec chain: chunks encoded by the libraries'
// own encoders decode to the values; bombs stop at the chunk's size; order
// F chunks come out in C order.
#include <blosc.h>
#include <bzlib.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <lzma.h>
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
    EXPECT_TRUE(parse_zarray(f).fortran_order);
    f["order"] = "K";
    try {
        parse_zarray(f);
        FAIL() << "order K accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("order \"K\""), std::string::npos) << e.what();
    }
    try {
        parse_zarray(zarray({4}, {4}, "<f8", {{"id", "lzf"}}));
        FAIL() << "lzf accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("\"lzf\""), std::string::npos) << e.what();
    }
    // lzma configurations numcodecs writes and ones nothing can decode.
    EXPECT_NO_THROW(parse_zarray(zarray({4}, {4}, "<f8", {{"id", "lzma"}, {"format", 1}, {"check", -1},
                                                           {"preset", nullptr}, {"filters", nullptr}})));
    for (const json& bad : {json{{"id", "lzma"}, {"format", 3}}, json{{"id", "lzma"}, {"format", 7}},
                            json{{"id", "lzma"}, {"format", "xz"}},
                            json{{"id", "lzma"}, {"format", 1}, {"filters", json::array({{{"id", 33}}})}}})
        EXPECT_THROW(parse_zarray(zarray({4}, {4}, "<f8", bad)), std::runtime_error) << bad.dump();
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

std::vector<uint8_t> bz2_encode(const std::vector<uint8_t>& raw, int level = 9) {
    unsigned n = static_cast<unsigned>(raw.size() + raw.size() / 100 + 600);
    std::vector<uint8_t> out(n);
    EXPECT_EQ(BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &n,
                                       const_cast<char*>(reinterpret_cast<const char*>(raw.data())),
                                       static_cast<unsigned>(raw.size()), level, 0, 0),
              BZ_OK);
    out.resize(n);
    return out;
}

// liblzma's own encoders: xz (lzma_easy_buffer_encode) or .lzma (lzma_alone_encoder).
std::vector<uint8_t> lzma_encode(const std::vector<uint8_t>& raw, bool alone = false, uint32_t preset = 6) {
    std::vector<uint8_t> out(lzma_stream_buffer_bound(raw.size()) + 64);
    if (!alone) {
        size_t pos = 0;
        EXPECT_EQ(lzma_easy_buffer_encode(preset, LZMA_CHECK_CRC64, nullptr, raw.data(), raw.size(), out.data(), &pos,
                                          out.size()),
                  LZMA_OK);
        out.resize(pos);
        return out;
    }
    lzma_options_lzma options;
    lzma_lzma_preset(&options, preset);
    lzma_stream s = LZMA_STREAM_INIT;
    EXPECT_EQ(lzma_alone_encoder(&s, &options), LZMA_OK);
    s.next_in = raw.data();
    s.avail_in = raw.size();
    s.next_out = out.data();
    s.avail_out = out.size();
    EXPECT_EQ(lzma_code(&s, LZMA_FINISH), LZMA_STREAM_END);
    out.resize(s.total_out);
    lzma_end(&s);
    return out;
}

TEST(ZarrCodecs, Bz2AndLzmaDecode) {
    const auto raw = bytes_of(ramp(1000));
    const ZarrArray bz2 = parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "bz2"}, {"level", 1}}));
    EXPECT_EQ(decode_chunk(bz2_encode(raw, 1), bz2), raw);
    // Two streams one after the other (Python's bz2.decompress reads both), then bytes that start no stream.
    const std::vector<uint8_t> first(raw.begin(), raw.begin() + 1000), second(raw.begin() + 1000, raw.end());
    auto two = bz2_encode(first);
    const auto tail = bz2_encode(second);
    two.insert(two.end(), tail.begin(), tail.end());
    EXPECT_EQ(decode_chunk(two, bz2), raw);
    two.insert(two.end(), {'j', 'u', 'n', 'k'});
    EXPECT_EQ(decode_chunk(two, bz2), raw);
    const json xz{{"id", "lzma"}, {"format", 1}, {"check", -1}, {"preset", nullptr}, {"filters", nullptr}};
    EXPECT_EQ(decode_chunk(lzma_encode(raw), parse_zarray(zarray({1000}, {1000}, "<i4", xz))), raw);
    EXPECT_EQ(decode_chunk(lzma_encode(raw, false, 9), parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "lzma"}}))),
              raw);
    EXPECT_EQ(decode_chunk(lzma_encode(raw, true), parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "lzma"}, {"format", 2}}))),
              raw);
    for (bool alone : {false, true})  // format 0: either
        EXPECT_EQ(decode_chunk(lzma_encode(raw, alone), parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "lzma"}, {"format", 0}}))),
                  raw);
    // As a filter before a shuffle (numcodecs chains them so).
    std::vector<uint8_t> shuffled(raw.size());
    for (size_t i = 0; i < 1000; ++i)
        for (size_t j = 0; j < 4; ++j) shuffled[j * 1000 + i] = raw[i * 4 + j];
    EXPECT_EQ(decode_chunk(bz2_encode(shuffled), parse_zarray(zarray({1000}, {1000}, "<i4", {{"id", "bz2"}},
                                                                     {{{"id", "shuffle"}, {"elementsize", 4}}}))),
              raw);
}

// The C-order bytes of a shape (item bytes each) whose element at (i...) is its own C index.
template <typename T>
std::vector<uint8_t> indexed(const std::vector<uint64_t>& shape, bool fortran) {
    const size_t rank = shape.size();
    uint64_t n = 1;
    for (uint64_t e : shape) n *= e;
    std::vector<T> v(n);
    std::vector<uint64_t> idx(rank, 0);
    for (uint64_t c = 0; c < n; ++c) {  // c: C index of idx
        uint64_t f = 0, stride = 1;
        for (size_t k = 0; k < rank; ++k) f += idx[k] * stride, stride *= shape[k];
        v[fortran ? f : c] = static_cast<T>(c * 3 + 1);
        for (size_t k = rank; k-- > 0;) {
            if (++idx[k] < shape[k]) break;
            idx[k] = 0;
        }
    }
    std::vector<uint8_t> b(n * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

template <typename T>
void check_fortran(const std::vector<uint64_t>& chunks, const std::string& dtype) {
    json z = zarray(chunks, chunks, dtype, {{"id", "zlib"}});
    z["order"] = "F";
    EXPECT_EQ(decode_chunk(zlib_encode(indexed<T>(chunks, true)), parse_zarray(z)), indexed<T>(chunks, false))
        << dtype << " rank " << chunks.size();
}

TEST(ZarrCodecs, FortranOrderChunksComeOutInCOrder) {
    for (const std::vector<uint64_t>& shape : std::vector<std::vector<uint64_t>>{{7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 5}, {3, 2, 2, 2, 3}}) {
        check_fortran<uint8_t>(shape, "|u1");
        check_fortran<int16_t>(shape, "<i2");
        check_fortran<float>(shape, "<f4");
        check_fortran<double>(shape, ">f8");  // byte order is the source's business: bytes move whole
    }
    // A scalar and a chunk without a codec.
    json z = zarray(json::array(), json::array(), "<f8");
    z["order"] = "F";
    EXPECT_EQ(decode_chunk(std::vector<uint8_t>(8, 7), parse_zarray(z)), std::vector<uint8_t>(8, 7));
    z = zarray({2, 3}, {2, 3}, "|u1");
    z["order"] = "F";
    EXPECT_EQ(decode_chunk(std::vector<uint8_t>{0, 3, 1, 4, 2, 5}, parse_zarray(z)), (std::vector<uint8_t>{0, 1, 2, 3, 4, 5}));
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
    // bz2 and lzma: bombs (also a second stream after an honest first one), truncated, corrupt, short.
    const auto honest = bytes_of(ramp(1024));
    refuses(bz2_encode(big), "bz2");
    auto twice = bz2_encode(honest);
    const auto more = bz2_encode(big);
    twice.insert(twice.end(), more.begin(), more.end());
    refuses(twice, "bz2");
    auto cut = bz2_encode(honest);
    cut.resize(cut.size() - 10);
    refuses(cut, "bz2");
    refuses(std::vector<uint8_t>{'B', 'Z', 'h', '9', 1, 2, 3}, "bz2");
    refuses(std::vector<uint8_t>{}, "bz2");
    refuses(bz2_encode(std::vector<uint8_t>(100)), "bz2");
    refuses(lzma_encode(big), "lzma");
    cut = lzma_encode(honest);
    cut.resize(cut.size() - 10);
    refuses(cut, "lzma");
    refuses(std::vector<uint8_t>(40, 0xfd), "lzma");
    refuses(lzma_encode(std::vector<uint8_t>(100)), "lzma");
}

TEST(ZarrCodecs, LzmaDictionaryBeyondTheMemoryLimitIsRefused) {
    // A .lzma header asking for a 1.5 GiB dictionary: refused before liblzma allocates it.
    std::vector<uint8_t> header{0x5d, 0, 0, 0, 0x60, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0};
    try {
        decode_chunk(header, parse_zarray(zarray({1024}, {1024}, "<i4", {{"id", "lzma"}, {"format", 2}})));
        ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("decoder memory"), std::string::npos) << e.what();
    }
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
