// codecs/inflate: inflate_bounded (libdeflate) against zlib's own inflate on
// the same bytes - honest streams, bombs, truncations, trailing bytes, wrong
// checksums, every single flipped bit - and gzip members as Python's gzip
// (numcodecs' decoder) reads them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "codecs/inflate.hpp"

namespace ncafs {
namespace {

using Bytes = std::vector<uint8_t>;

// Values that compress but not to nothing: a slow ramp with a pattern on it.
Bytes sample(size_t n) {
    Bytes b(n);
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i / 7) ^ (i % 13) * 17);
    return b;
}

// zlib's deflate: windowBits 15 = a zlib stream, 31 = a gzip member.
Bytes deflate_with_zlib(const Bytes& raw, int level, bool gzip) {
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, level, Z_DEFLATED, gzip ? 31 : 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    Bytes out(deflateBound(&z, raw.size()));
    z.next_in = const_cast<Bytef*>(raw.data());
    z.avail_in = static_cast<uInt>(raw.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// What zlib's inflate makes of `in` (one stream or member, bytes after it
// ignored): the data, or nullopt when zlib reports an error or the stream
// ends early. Stops once more than `limit` bytes came out.
struct ZlibResult {
    std::optional<Bytes> data;
    bool over_limit = false;
};

ZlibResult inflate_with_zlib(const Bytes& in, size_t limit, bool gzip) {
    z_stream z{};
    EXPECT_EQ(inflateInit2(&z, gzip ? 31 : 15), Z_OK);
    Bytes out(limit + 1);
    z.next_in = const_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_FINISH);
    const size_t made = z.total_out;
    inflateEnd(&z);
    ZlibResult r;
    r.over_limit = made > limit;
    if (rc == Z_STREAM_END && !r.over_limit) r.data = Bytes(out.begin(), out.begin() + static_cast<long>(made));
    return r;
}

// inflate_bounded's data, or its error message prefixed with "error: ".
std::string ours(const Bytes& in, uint64_t bound, bool exact, bool gzip) {
    try {
        const Bytes b = inflate_bounded(in, bound, exact, gzip);
        return std::string(b.begin(), b.end());
    } catch (const std::runtime_error& e) {
        return std::string("error: ") + e.what();
    }
}

// Both decoders on `in`: the same data, or both an error (ours refusing a
// bomb as a bomb).
void expect_agreement(const Bytes& in, size_t bound, bool gzip, const std::string& what) {
    const ZlibResult z = inflate_with_zlib(in, bound, gzip);
    const std::string got = ours(in, bound, false, gzip);
    const std::string id = gzip ? "gzip" : "zlib";
    if (z.data) {
        EXPECT_EQ(got, std::string(z.data->begin(), z.data->end())) << what;
    } else if (z.over_limit) {
        EXPECT_EQ(got, "error: " + id + " data decode to more than " + std::to_string(bound) +
                           " bytes (the chunk's size): refused")
            << what;
    } else {
        EXPECT_EQ(got.rfind("error: " + id + " data", 0), 0u) << what << ": zlib refuses, we made " << got.size();
    }
}

TEST(InflateBounded, HonestStreamsAgreeWithZlib) {
    for (bool gzip : {false, true})
        for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20})
            for (int level : {0, 1, 9}) {
                const Bytes raw = sample(n);
                const Bytes stored = deflate_with_zlib(raw, level, gzip);
                EXPECT_EQ(inflate_bounded(stored, n, true, gzip), raw) << n << " level " << level;
                expect_agreement(stored, n, gzip, "size " + std::to_string(n));
                // A larger bound without `exact`: the data as they are.
                EXPECT_EQ(inflate_bounded(stored, n + 100, false, gzip), raw);
            }
}

TEST(InflateBounded, ABombStopsAtTheBound) {
    const Bytes zeros(16 << 20);  // 16 MiB of zeros in about 16 KiB
    for (bool gzip : {false, true}) {
        const Bytes bomb = deflate_with_zlib(zeros, 9, gzip);
        ASSERT_TRUE(inflate_with_zlib(bomb, 4096, gzip).over_limit);
        const std::string id = gzip ? "gzip" : "zlib";
        for (bool exact : {false, true})
            EXPECT_EQ(ours(bomb, 4096, exact, gzip),
                      "error: " + id + " data decode to more than 4096 bytes (the chunk's size): refused");
        EXPECT_EQ(ours(deflate_with_zlib(Bytes(1), 6, gzip), 0, false, gzip),
                  "error: " + id + " data decode to more than 0 bytes (the chunk's size): refused");
    }
}

TEST(InflateBounded, EveryTruncationIsAnErrorAsInZlib) {
    const Bytes raw = sample(5000);
    for (bool gzip : {false, true}) {
        const Bytes whole = deflate_with_zlib(raw, 6, gzip);
        for (size_t n = 0; n < whole.size(); ++n) {
            const Bytes cut(whole.begin(), whole.begin() + static_cast<long>(n));
            ASSERT_FALSE(inflate_with_zlib(cut, raw.size(), gzip).data) << n;
            EXPECT_EQ(ours(cut, raw.size(), true, gzip), std::string("error: ") + (gzip ? "gzip" : "zlib") +
                                                             " data are corrupt or truncated")
                << "cut at " << n << " of " << whole.size();
        }
    }
}

TEST(InflateBounded, AWrongChecksumIsAnErrorAsInZlib) {
    const Bytes raw = sample(3000);
    // zlib: the Adler-32 in the last 4 bytes; gzip: CRC-32 then the size.
    for (bool gzip : {false, true})
        for (size_t from_end = 1; from_end <= (gzip ? 8u : 4u); ++from_end) {
            Bytes stored = deflate_with_zlib(raw, 6, gzip);
            stored[stored.size() - from_end] ^= 0x01;
            ASSERT_FALSE(inflate_with_zlib(stored, raw.size(), gzip).data);
            EXPECT_EQ(ours(stored, raw.size(), true, gzip),
                      std::string("error: ") + (gzip ? "gzip" : "zlib") + " data are corrupt or truncated");
        }
}

TEST(InflateBounded, EveryFlippedBitAgreesWithZlib) {
    const Bytes raw = sample(600);
    for (bool gzip : {false, true}) {
        const Bytes whole = deflate_with_zlib(raw, 6, gzip);
        for (size_t bit = 0; bit < whole.size() * 8; ++bit) {
            Bytes flipped = whole;
            flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
            expect_agreement(flipped, raw.size(), gzip, "bit " + std::to_string(bit));
        }
    }
}

TEST(InflateBounded, BytesAfterAZlibStreamAreIgnoredAsByZlib) {
    // zlib's inflate, HDF5's deflate filter and numcodecs' zlib.decompress
    // all stop at the stream's end.
    const Bytes raw = sample(2000);
    Bytes stored = deflate_with_zlib(raw, 6, false);
    for (const Bytes& tail : {Bytes{'g', 'a', 'r', 'b'}, Bytes{0x78, 0x9c}, Bytes{0, 0, 0, 0}, stored}) {
        Bytes longer = stored;
        longer.insert(longer.end(), tail.begin(), tail.end());
        ASSERT_EQ(inflate_with_zlib(longer, raw.size(), false).data, raw);
        EXPECT_EQ(inflate_bounded(longer, raw.size(), true, false), raw) << tail.size();
    }
}

TEST(InflateBounded, GzipMembersFollowOneAnotherAsInPythonsGzip) {
    // numcodecs writes one member but decodes with Python's gzip module,
    // which reads members one after the other, skips zero padding between
    // them and refuses anything else ("Not a gzipped file").
    const Bytes a = sample(1500);
    const Bytes b = sample(700);
    Bytes two = deflate_with_zlib(a, 6, true);
    const Bytes second = deflate_with_zlib(b, 1, true);
    Bytes both = a;
    both.insert(both.end(), b.begin(), b.end());
    two.insert(two.end(), {0, 0, 0});
    two.insert(two.end(), second.begin(), second.end());
    EXPECT_EQ(inflate_bounded(two, both.size(), true, true), both);
    two.insert(two.end(), 5, 0);
    EXPECT_EQ(inflate_bounded(two, both.size(), true, true), both);
    EXPECT_EQ(ours(two, both.size() - 1, false, true),
              "error: gzip data decode to more than 2199 bytes (the chunk's size): refused");
    Bytes garbage = two;
    garbage.insert(garbage.end(), {'x', 'y'});
    EXPECT_EQ(ours(garbage, both.size(), true, true), "error: gzip data are corrupt or truncated");
}

TEST(InflateBounded, AShortResultIsAnErrorOnlyWhenExact) {
    const Bytes stored = deflate_with_zlib(sample(100), 6, false);
    EXPECT_EQ(ours(stored, 101, true, false), "error: zlib data decode to 100 bytes, the chunk needs 101 bytes");
    EXPECT_EQ(inflate_bounded(stored, 101, false, false), sample(100));
}

TEST(InflateBounded, ThreadsInflateAtOnce) {
    const Bytes raw = sample(200000);
    const Bytes stored = deflate_with_zlib(raw, 6, false);
    std::vector<std::thread> threads;
    std::vector<int> good(4, 0);
    for (size_t t = 0; t < good.size(); ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20; ++i) good[t] += inflate_bounded(stored, raw.size(), true) == raw;
        });
    for (auto& t : threads) t.join();
    for (int g : good) EXPECT_EQ(g, 20);
}

}  // namespace
}  // namespace ncafs
