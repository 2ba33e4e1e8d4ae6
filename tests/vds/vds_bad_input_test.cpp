// Hostile VDS containers: truncation at every byte of the smallest fixture,
// random byte flips, hostile layout JSON and page tables, a descriptor that
// disagrees with the geometry, Wavelet layers. Every case must end in a
// typed error (FormatError, or SourceError for I/O) or a successful read:
// never a crash (the suite runs under ASan/UBSan), never a hang.
#include <gtest/gtest.h>

#include "io/open_file.hpp"
#include <unistd.h>

#include <random>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/vds/vds_failure_memo.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "tests/vds/vds_test_support.hpp"

namespace {

using namespace vds_test;

const char* kSmallest = "r32_zip_const_novalue.vds";

// Opens and (optionally) reads every variable; returns the error text, or "" on success.
std::string try_open(const std::string& path, bool read) {
    try {
        const auto ds = ncafs::vds::open_vds_dataset(path);
        if (read)
            for (const auto& v : ds.variables) read_all(v);
        return "";
    } catch (const ncafs::FormatError& e) {
        return e.what();
    } catch (const ncafs::SourceError& e) {
        return e.what();
    }
}

std::string with_bytes(const std::vector<uint8_t>& b, bool read) {
    // Thousands of temporary files in a row: a new one may get a removed
    // one's inode, size and (coarse) timestamps, so that its identity
    // matches a failure remembered for another; this test wants each parsed.
    ncafs::vds::set_failure_memo_entries(0);
    const std::string path = write_temp(b);
    std::string r = try_open(path, read);
    ::unlink(path.c_str());
    return r;
}

// Truncation at every byte: opening must fail with a typed error (the file
// table and page directories are at the end); every 251st length is also
// read in full (reads may fail only with typed errors).
TEST(VdsBadInput, TruncationAtEveryByte) {
    ncafs::set_settling_window(std::chrono::nanoseconds(0));  // every truncate is a fresh change
    const auto full = read_bytes(fixture(kSmallest));
    const std::string path = write_temp(full);
    for (size_t n = full.size(); n-- > 0;) {
        ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(n)), 0);
        const std::string r = try_open(path, n % 251 == 0);
        ASSERT_FALSE(r.empty()) << "truncated to " << n << " bytes opened fine";
    }
    ::unlink(path.c_str());
}

TEST(VdsBadInput, RandomByteFlips) {
    ncafs::set_settling_window(std::chrono::nanoseconds(0));
    const auto full = read_bytes(fixture(kSmallest));
    std::mt19937_64 rng(20261124);
    for (int trial = 0; trial < 300; ++trial) {
        auto b = full;
        for (int k = 0; k < 4; ++k) b[rng() % b.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
        with_bytes(b, true);  // any typed error or success; a crash fails the run
    }
    // The other payload kinds (RLE, None, Zip with margins 0): flips in chunk bytes.
    for (const char* other : {"u16_rle_quantized.vds", "r64_2d_none.vds", "r32_zip_brick64_margin0.vds"}) {
        const auto bytes = read_bytes(fixture(other));
        for (int trial = 0; trial < 100; ++trial) {
            auto b = bytes;
            for (int k = 0; k < 3; ++k) b[rng() % b.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
            with_bytes(b, true);
        }
    }
    // Flips confined to the metadata at the end (tables, pages) hit harder.
    const size_t tail = 2048;
    for (int trial = 0; trial < 300; ++trial) {
        auto b = full;
        b[b.size() - 1 - rng() % tail] ^= static_cast<uint8_t>(1 + rng() % 255);
        with_bytes(b, true);
    }
}

// Replaces the layout JSON: appends `json` and points the layout's entry at it.
std::vector<uint8_t> with_layout(const std::string& json) {
    auto b = read_bytes(fixture(kSmallest));
    const auto rows = walk(b);
    const uint64_t entry = row(rows, "VolumeDataLayout").first_page;
    put<int64_t>(b, entry, static_cast<int64_t>(b.size()));
    put<int32_t>(b, entry + 8, static_cast<int32_t>(json.size()));
    b.insert(b.end(), json.begin(), json.end());
    return b;
}

std::string layout_text() {
    const auto b = read_bytes(fixture(kSmallest));
    const uint64_t entry = row(walk(b), "VolumeDataLayout").first_page;
    const auto at = static_cast<size_t>(get<int64_t>(b, entry));
    return std::string(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + static_cast<size_t>(get<int32_t>(b, entry + 8))));
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
}

TEST(VdsBadInput, HostileLayoutJson) {
    // The unmodified layout, re-pointed, still reads: the patching is sound.
    EXPECT_EQ(with_bytes(with_layout(layout_text()), true), "");
    const std::string deep = std::string(300, '[') + std::string(300, ']');
    EXPECT_NE(with_bytes(with_layout(deep), false).find("deeper than 256"), std::string::npos);
    const std::string text = layout_text();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"\"numSamples\" : 70", "\"numSamples\" : -70"},
        {"\"numSamples\" : 70", "\"numSamples\" : 1e300"},
        {"\"numSamples\" : 70", "\"numSamples\" : \"70\""},
        {"\"numSamples\" : 70", "\"numSamples\" : 100"},  // chunk count no longer matches: names the layer
        {"BrickSize_32", "BrickSize_33"},
        {"BrickSize_32", "BrickSize_99999999999999999999"},
        {"\"negativeMargin\" : 4", "\"negativeMargin\" : 40"},
        {"Format_R32", "Format_R16"},
        {"\"noValue\" : -999.25", "\"noValue\" : 1e300"},
        {"LODLevels_2", "LODLevels_40"},
        {"\"axisDescriptors\"", "\"axisDescriptorz\""},
        {"{", "{\"x\":"},
    };
    for (const auto& [from, to] : cases) {
        const std::string r = with_bytes(with_layout(replaced(text, from, to)), true);
        EXPECT_FALSE(r.empty()) << to;
    }
    const std::string r = with_bytes(with_layout(replaced(text, "\"numSamples\" : 70", "\"numSamples\" : 100")), false);
    EXPECT_NE(r.find("layer Dimensions_012LOD0"), std::string::npos) << r;
}

TEST(VdsBadInput, HostilePageTables) {
    const auto full = read_bytes(fixture(kSmallest));
    const auto rows = walk(full);
    const FileRow& lod0 = row(rows, "Dimensions_012LOD0");
    auto expect_error = [&](std::vector<uint8_t> b, const char* what, bool read = true) {
        EXPECT_FALSE(with_bytes(b, read).empty()) << what;
    };
    auto b = full;
    put<int32_t>(b, 24, 0x7fffffff);  // file table count
    expect_error(b, "huge file count");
    b = full;
    put<int32_t>(b, 28, -8);  // name length
    expect_error(b, "negative name length");
    b = full;
    put<int64_t>(b, 16, -1);
    expect_error(b, "negative table offset");
    b = full;
    put<int64_t>(b, lod0.header_at, static_cast<int64_t>(full.size()) - 4);  // directory past the end
    expect_error(b, "page directory past the end");
    b = full;
    put<int32_t>(b, lod0.header_at + 8, 0x7fffffff);  // chunk count
    expect_error(b, "huge chunk count");
    b = full;
    put<int32_t>(b, lod0.header_at + 16, 0);  // entries per page
    expect_error(b, "zero entries per page");
    b = full;
    put<int64_t>(b, lod0.directory + 16 + 12, static_cast<int64_t>(full.size()) - 10);  // index page past the end
    expect_error(b, "index page past the end");
    b = full;
    put<int64_t>(b, lod0.directory + 16 + 12, std::numeric_limits<int64_t>::max());
    expect_error(b, "index page offset overflow");
    b = full;  // every chunk entry of LOD0 pointing past the end
    for (int c = 0; c < 18; ++c) put<int32_t>(b, lod0.first_page + static_cast<uint64_t>(c) * 24 + 8, 0x7fffffff);
    expect_error(b, "chunk length past the end");
}

// Chunk 0 of LOD0 is data; its descriptor says 32x32x32.
TEST(VdsBadInput, DescriptorDisagreeingWithGeometryNamesLayerAndChunk) {
    auto b = read_bytes(fixture(kSmallest));
    const auto rows = walk(b);
    const FileRow& lod0 = row(rows, "Dimensions_012LOD0");
    const auto chunk0 = static_cast<uint64_t>(get<int64_t>(b, lod0.first_page));
    ASSERT_EQ(get<int32_t>(b, chunk0 + 4), 32);
    put<int32_t>(b, chunk0 + 4, 31);
    const std::string r = with_bytes(b, true);
    EXPECT_NE(r.find("layer Dimensions_012LOD0 chunk 0"), std::string::npos) << r;
}

TEST(VdsBadInput, WaveletLayerIsRefusedNamingTheLayer) {
    auto b = read_bytes(fixture(kSmallest));
    const auto rows = walk(b);
    const FileRow& lod1 = row(rows, "Dimensions_012LOD1");
    ASSERT_EQ(get<int32_t>(b, lod1.directory + 16), 3);  // Zip
    put<int32_t>(b, lod1.directory + 16, 1);             // Wavelet
    const std::string r = with_bytes(b, false);
    EXPECT_NE(r.find("Dimensions_012LOD1"), std::string::npos) << r;
    EXPECT_NE(r.find("Wavelet"), std::string::npos) << r;
}

}  // namespace
