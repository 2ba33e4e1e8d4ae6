// SimdjsonSaxReader against nlohmann::json::sax_parse: the same events, in
// the same order, with the same number kinds and values, for every text
// nlohmann reads; no events accepted for text nlohmann refuses. Hand-picked
// edge cases, then seeded random JSON (escapes, non-ASCII, floats, big
// integers), each also mutated byte by byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "aggregation/json/simdjson_sax_reader.hpp"
#include "aggregation/json/streamed_json.hpp"

namespace ncafs {
namespace {

using nlohmann::json;

// Every SAX event as text; a float by its bits, so 1 and 1.0 and -0.0 differ.
struct EventLog {
    std::vector<std::string> events;
    bool add(std::string e) { return events.push_back(std::move(e)), true; }
    bool null() { return add("null"); }
    bool boolean(bool v) { return add(v ? "true" : "false"); }
    bool number_integer(json::number_integer_t v) { return add("i " + std::to_string(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return add("u " + std::to_string(v)); }
    bool number_float(json::number_float_t v, const std::string&) {
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        return add("f " + std::to_string(bits));
    }
    bool string(std::string& v) { return add("s " + v); }
    bool binary(json::binary_t&) { return add("binary"); }
    bool key(std::string& k) { return add("k " + k); }
    bool start_object(std::size_t) { return add("{"); }
    bool end_object() { return add("}"); }
    bool start_array(std::size_t) { return add("["); }
    bool end_array() { return add("]"); }
    bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }
};

enum class Outcome { Read, Declined };

// Reads `text` with both (simdjson over an unpadded copy, so the padding
// path is exercised too) and checks they agree.
Outcome compare(const std::string& text) {
    EventLog theirs, ours;
    const bool valid = json::sax_parse(text, &theirs);
    const bool read = agg::SimdjsonSaxReader<EventLog>(text, text.size(), ours).read();
    if (read) {
        EXPECT_TRUE(valid) << "simdjson read what nlohmann refuses: " << text;
        EXPECT_EQ(ours.events, theirs.events) << text;
    } else if (valid && (text.find_first_not_of(" \t\r\n") == std::string::npos ||
                         std::strchr("[{", text[text.find_first_not_of(" \t\r\n")]))) {
        ADD_FAILURE() << "simdjson declined a container nlohmann reads: " << text;
    }
    return read ? Outcome::Read : Outcome::Declined;
}

TEST(NcaSimdjson, EdgeCasesGiveNlohmannsEvents) {
    for (const char* refused : {"tru", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "", " ", "[] x", "nul", "[", "{\"a\":}",
                                "[\"\t\"]", "[\"a\nb\"]", "{\"\x01\":1}", "[01]", "[1.]", "[-]", "[--1]", "[+1]",
                                "[1e999]", "[-1e999]", "[1 2]", "{1:2}", "[\"\xff\"]", "[\"\\x\"]", "[\"\\ud800\"]",
                                "\xef\xbb\xbf[1]", "[NaN]", "[.5]"})
        EXPECT_EQ(compare(refused), Outcome::Declined) << refused;
    for (const char* same :
         {"[-0]", "[0]", "[-0.0]", "[1.5]", "[1e5]", "[1E+2]", "[2.5e-3]", "[1e-400]", "[-7]", "[123456789012345678]",
          "[9223372036854775807]", "[9223372036854775808]", "[-9223372036854775808]", "[-9223372036854775809]",
          "[18446744073709551615]", "[18446744073709551616]", "[123456789012345678901234567890]",
          "[-123456789012345678901234567890]", "[0.1, 0.30000000000000004, 1.7976931348623157e308, 5e-324]",
          "[\"a\\n\\\"b\\\\c\\/\\u0041\\u00e9\\ud83d\\ude00\"]", "[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]",
          "{\"\\u0070\": 1, \"p\": 2, \"p\": [3]}", "{\"\xc3\xa9\\t\": null}", " [ 1 , [ ] , { } ] ", "{}", "[]",
          "{\"a\": {\"b\": [false, \"x y\", true, null]}, \"a\": 3}", "[\"\"]", "\t\r\n[1]\n"})
        EXPECT_EQ(compare(same), Outcome::Read) << same;
    for (const char* scalar : {"0", "-7", "\"s\"", "true", "null", "1.5"})  // left to nlohmann
        EXPECT_EQ(compare(scalar), Outcome::Declined) << scalar;
}

// Escape-free, escaped (quote, backslash, control bytes) and non-ASCII pieces.
std::string random_string(std::mt19937& rng) {
    static const std::vector<std::string> pieces = {"a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\x01",
                                                   "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "nc", "0"};
    std::string s;
    for (unsigned k = rng() % 5; k > 0; --k) s += pieces[rng() % pieces.size()];
    return s;
}

json random_scalar(std::mt19937& rng) {
    switch (rng() % 8) {
        case 0: return static_cast<int64_t>(rng() % 2000) - 1000;
        case 1: return static_cast<int64_t>((static_cast<uint64_t>(rng()) << 32) | rng());  // either sign
        case 2: return (static_cast<uint64_t>(rng()) << 32) | rng();
        case 3: return std::ldexp(static_cast<double>(rng()) - 2147483648.0, static_cast<int>(rng() % 200) - 100);
        case 4: return random_string(rng);
        case 5: return rng() % 2 == 0;
        default: return nullptr;
    }
}

json random_value(std::mt19937& rng, int depth) {
    switch (rng() % (depth > 3 ? 1 : 3)) {
        case 0: return random_scalar(rng);
        case 1: {
            json a = json::array();
            for (unsigned k = rng() % 4; k > 0; --k) a.push_back(random_value(rng, depth + 1));
            return a;
        }
        default: {
            json o = json::object();
            for (unsigned k = rng() % 4; k > 0; --k)
                o[random_string(rng)] = random_value(rng, depth + 1);
            return o;
        }
    }
}

TEST(NcaSimdjson, RandomJsonAndMutationsGiveNlohmannsEvents) {
    std::mt19937 rng(20261124);
    const std::string alphabet = "{}[],:\"0123456789-+.eE truefalsnul\\u\x80\xc3\t\n\x01";
    size_t read = 0;
    for (int n = 0; n < 400; ++n) {
        const std::string text = json::array({random_value(rng, 0)}).dump(rng() % 2 ? -1 : 1, ' ', rng() % 2 == 0);
        read += compare(text) == Outcome::Read;
        for (int m = 0; m < 10; ++m) {
            std::string mutated = text;
            const size_t at = rng() % (mutated.size() + 1);
            switch (rng() % 3) {
                case 0: mutated.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
                case 1: if (at < mutated.size()) mutated.erase(at, 1); break;
                default: if (at < mutated.size()) mutated[at] = alphabet[rng() % alphabet.size()]; break;
            }
            compare(mutated);
        }
    }
    EXPECT_EQ(read, 400u);  // dump()'s own text is valid JSON: every one read
}

// Through the streaming builder: nlohmann's tree, with the text read in
// place when enough bytes after it are readable, copied otherwise.
TEST(NcaSimdjson, StreamingGivesNlohmannsTreeInPlaceOrCopied) {
    const std::string text = R"({"a": [1, -2, 3.5, "\u00e9"], "Partitions": [{"x": 1}, [2]], "z": {"y": null}})";
    agg::StreamedList list;
    std::vector<json> seen;
    agg::StreamCallbacks callbacks{nullptr, [&](uint64_t, agg::FlatJson::Ref e) { seen.push_back(e.to_json()); }};
    json expected = json::parse(text);
    const json partitions = expected["Partitions"];
    expected["Partitions"] = json::array();
    std::string padded = text;
    padded.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    for (const size_t allocated : {text.size(), padded.capacity()}) {
        seen.clear();
        const auto root = agg::parse_json_streaming_simdjson(padded, allocated, "Partitions", callbacks, list);
        ASSERT_TRUE(root.has_value());
        EXPECT_EQ(*root, expected);
        EXPECT_EQ(json(seen), partitions);
        EXPECT_EQ(list.count, 2u);
    }
    EXPECT_FALSE(agg::parse_json_streaming_simdjson("{\"Partitions\": [1,]}", 0, "Partitions", callbacks, list));
}

}  // namespace
}  // namespace ncafs
