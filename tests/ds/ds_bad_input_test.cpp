// Hostile and damaged ds files: every outcome is a dataset that reads, or a
// typed ncafs::Error (FormatError for bad bytes, SourceError when data is
// missing) -- never a crash, another exception type, or a hang.
#include <gtest/gtest.h>

#include <random>

#include "codecs/ds/ds_reader.hpp"
#include "codecs/error.hpp"
#include "ds_test_support.hpp"

using namespace ncafs;

namespace {

// A small valid file with every kind of block: masked numbers, bool,
// strings with a mask, big- and little-endian numbers, a scalar, an empty
// variable, attributes with NaN.
std::vector<uint8_t> small_file() {
    const std::string header =
        R"({"a": {".dims": ["x"], "_FillValue": -9, ".size": [5], ".offset": 0, ".len": 9, ".type": "int16", ".missing": true, ".endian": "l"}, )"
        R"("b": {".dims": ["x"], ".size": [5], ".offset": 9, ".len": 1, ".type": "bool", ".missing": false, ".endian": "b"}, )"
        R"("s": {".dims": ["y"], ".size": [3], ".offset": 10, ".len": 20, ".type": "str", ".missing": true, ".endian": "b"}, )"
        R"("d": {".dims": [], "v": [NaN, Infinity], ".size": [], ".offset": 30, ".len": 8, ".type": "float64", ".missing": false, ".endian": "b"}, )"
        R"("e": {".dims": [], ".size": null, ".offset": 38, ".len": 0, ".type": "int32", ".missing": false}, )"
        R"(".": {"title": "small"}})";
    std::string s = "ds-1.0\n" + header + "\n";
    std::vector<uint8_t> b(s.begin(), s.end());
    const uint8_t body[] = {
        0b01000000, 1, 0, 3, 0, 4, 0, 5, 0,                    // a: [1, --, 3, 4, 5]
        0b10110000,                                            // b: 1 0 1 1 0
        0b00100000, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 'h', 'i', 'x',  // s: ["hi", "x", --]
        0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18,        // d: pi
    };
    b.insert(b.end(), std::begin(body), std::end(body));
    return b;
}

// Opens and reads every value; returns "" on success, else the error text.
// Any exception that is not an ncafs::Error fails the test.
std::string open_and_read_all(const std::string& path) {
    try {
        const Dataset d = ds::open_ds_dataset(path);
        for (const auto& v : d.variables) {
            const uint64_t n = v.source->element_count();
            std::vector<uint8_t> out(n * type_size(v.type));
            if (n) v.source->read_linear(0, n, ByteOrder::Native, out.data());
            if (n) v.source->read_linear(n - 1, 1, ByteOrder::Big, out.data());
        }
        return "";
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << path << ": untyped exception " << e.what();
        return e.what();
    } catch (...) {
        ADD_FAILURE() << path << ": unknown exception";
        return "?";
    }
}

}  // namespace

TEST(DsBadInput, TheSmallFileIsValid) {
    const std::string dir = ds_test::scratch_dir("bad_valid");
    ds_test::write_bytes(dir + "/f.ds", small_file());
    EXPECT_EQ(open_and_read_all(dir + "/f.ds"), "");
    const Dataset d = ds::open_ds_dataset(dir + "/f.ds");
    std::vector<int16_t> a(5);
    d.find_variable("a")->source->read_linear(0, 5, ByteOrder::Native, a.data());
    EXPECT_EQ(a, (std::vector<int16_t>{1, -9, 3, 4, 5}));
    std::vector<char> s(6);
    d.find_variable("s")->source->read_linear(0, 6, ByteOrder::Native, s.data());
    EXPECT_EQ(std::string(s.begin(), s.end()), std::string("hix\0\0\0", 6));
    std::vector<int8_t> b(5);
    d.find_variable("b")->source->read_linear(0, 5, ByteOrder::Native, b.data());
    EXPECT_EQ(b, (std::vector<int8_t>{1, 0, 1, 1, 0}));
}

TEST(DsBadInput, AllEmptyStringsReadAsNul) {
    // Found by ds_reader_fuzz: a string block holding only empty strings had
    // memcpy read from a null pointer (no bytes to copy, still undefined).
    const std::string header =
        R"({"s": {".dims": ["x"], ".size": [2], ".offset": 0, ".len": 16, ".type": "str", ".missing": false, ".endian": "b"}, ".": {}})";
    std::string text = "ds-1.0\n" + header + "\n" + std::string(16, '\0');  // two 8-byte length words, both 0
    const std::string dir = ds_test::scratch_dir("bad_empty_strings");
    ds_test::write_bytes(dir + "/e.ds", std::vector<uint8_t>(text.begin(), text.end()));
    const Dataset d = ds::open_ds_dataset(dir + "/e.ds");
    const auto* s = d.find_variable("s");
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(d.shape(*s), (std::vector<uint64_t>{2, 1}));  // strlen dimension of at least 1
    std::vector<char> chars(2, 'x');
    s->source->read_linear(0, 2, ByteOrder::Native, chars.data());
    EXPECT_EQ(chars, (std::vector<char>{'\0', '\0'}));
}

TEST(DsBadInput, TruncationAtEveryByteIsATypedError) {
    const auto full = small_file();
    const std::string dir = ds_test::scratch_dir("bad_truncate");
    for (size_t n = 0; n < full.size(); ++n) {
        const std::string p = dir + "/t.ds";
        ds_test::write_bytes(p, std::vector<uint8_t>(full.begin(), full.begin() + static_cast<ptrdiff_t>(n)));
        EXPECT_NE(open_and_read_all(p), "") << "truncated to " << n << " bytes was accepted";
    }
}

TEST(DsBadInput, RandomByteFlipsNeverCrash) {
    const auto full = small_file();
    const std::string dir = ds_test::scratch_dir("bad_flip");
    std::mt19937 rng(12345);
    int rejected = 0;
    for (int iter = 0; iter < 1500; ++iter) {
        auto b = full;
        const int flips = 1 + static_cast<int>(rng() % 3);
        for (int k = 0; k < flips; ++k) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        ds_test::write_bytes(dir + "/f.ds", b);
        rejected += open_and_read_all(dir + "/f.ds").empty() ? 0 : 1;
    }
    EXPECT_GT(rejected, 100);
}

TEST(DsBadInput, HostileHeadersAreFormatErrors) {
    const std::string dir = ds_test::scratch_dir("bad_hostile");
    const std::string body(64, '\0');
    const std::string cases[] = {
        R"({"a": {".dims": ["x", "y"], ".size": [1000000000000, 1000000000000], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [18446744073709551615], ".offset": 0, ".len": 8, ".type": "float64", ".missing": false, ".endian": "l"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 18446744073709551615, ".len": 8, ".type": "int16", ".missing": false, ".endian": "l"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 60, ".len": 8, ".type": "int16", ".missing": false, ".endian": "l"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": -8, ".type": "int16", ".missing": false, ".endian": "l"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [40], ".offset": 0, ".len": 8, ".type": "int16", ".missing": false, ".endian": "l"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 8, ".type": "int17", ".missing": false, ".endian": "l"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 8, ".type": 5, ".missing": false, ".endian": "l"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 8, ".type": "int16", ".missing": false, ".endian": "x"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 8, ".type": "int16", ".missing": false}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4, 4], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, "b": {".dims": ["x"], ".size": [5], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 8, ".type": "int8", ".missing": "yes", ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": [1], ".size": [4], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [-4], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [4.5], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [64], ".offset": 0, ".len": 64, ".type": "str", ".missing": false, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": ["x"], ".size": [500], ".offset": 0, ".len": 64, ".type": "int8", ".missing": true, ".endian": "b"}, ".": {}})",
        R"({"a": {".dims": [], ".size": null, ".offset": 0, ".len": 0, ".type": "int8", ".missing": false, ".endian": "b"}, ".": []})",
        R"({"a": 3, ".": {}})",
        // Found by ds_reader_fuzz: a number beyond double's range escaped as nlohmann's out_of_range.
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 4, ".type": "int8", "big": 1e999}, ".": {}})",
        R"([1, 2])",
        R"({"a": {".dims": ["x"], ".size": [4], ".offset": 0, ".len": 8, ".type": "int8", ".missing": false, ".endian": "b"}, ".": {})",
    };
    int i = 0;
    for (const auto& header : cases) {
        const std::string p = dir + "/h" + std::to_string(i++) + ".ds";
        const std::string text = "ds-1.0\n" + header + "\n" + body;
        ds_test::write_bytes(p, std::vector<uint8_t>(text.begin(), text.end()));
        try {
            const Dataset d = ds::open_ds_dataset(p);
            for (const auto& v : d.variables) {
                const uint64_t n = v.source->element_count();
                std::vector<uint8_t> out(n * type_size(v.type));
                if (n) v.source->read_linear(0, n, ByteOrder::Native, out.data());
            }
            ADD_FAILURE() << "accepted: " << header;
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "message does not name the file: " << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not a FormatError for " << header << ": " << e.what();
        }
    }
    // Strings whose length words claim more than the block holds.
    const std::string s = R"({"a": {".dims": ["x"], ".size": [2], ".offset": 0, ".len": 20, ".type": "str", ".missing": false, ".endian": "b"}, ".": {}})";
    std::string text = "ds-1.0\n" + s + "\n";
    const uint8_t words[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 'a', 'b', 'c', 'd'};
    text.append(reinterpret_cast<const char*>(words), sizeof words);
    ds_test::write_bytes(dir + "/strings.ds", std::vector<uint8_t>(text.begin(), text.end()));
    EXPECT_THROW(ds::open_ds_dataset(dir + "/strings.ds"), FormatError);
    // Wrong versions and non-ds files.
    for (const std::string bad : {"ds-2.0\n{}\n", "ds-1.0\r\n{}\n", "CDF\x01\0\0\0\0", "ds-1.0\n{\"a\": 1"}) {
        ds_test::write_bytes(dir + "/v.ds", std::vector<uint8_t>(bad.begin(), bad.end()));
        EXPECT_THROW(ds::open_ds_dataset(dir + "/v.ds"), FormatError) << bad;
    }
}
