// The NCA JSON is read in one streaming pass, partition by partition: key
// order, a second pass when context follows the list, and the rules that
// only hold once the number of partitions is known.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/json/streamed_json.hpp"
#include "aggregation/read/path_policy.hpp"
#include "io/confined_open.hpp"
#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// Two 2x3 partitions a.nc (0..5) and b.nc (100..105) of a float master v(x=4, y=3).
struct TwoParts {
    std::string dir = test::fresh_dir("nca_stream");
    TwoParts() {
        for (auto [name, base] : {std::pair{"a.nc", 0.0}, std::pair{"b.nc", 100.0}}) {
            std::vector<double> vals;
            for (int i = 0; i < 6; ++i) vals.push_back(base + i);
            test::nc_write(dir + "/" + name, {{"a", 2}, {"b", 3}}, {test::NcVarSpec{"p", NC_FLOAT, {"a", "b"}, {}, vals}});
        }
    }
    std::string write(const std::string& json) const {
        std::string path = dir + "/agg.nca";
        test::NcVarSpec v{"v", NC_FLOAT, {}, {{"cf_role", "nca_variable"}, {"nca_dimensions", "x y"}, {"nca_array", json}}, {}};
        test::nc_write(path, {{"x", 4}, {"y", 3}}, {v});
        return path;
    }
    std::string warnings(const std::string& nca) const {
        agg::DatasetCache cache(4);
        std::string all;
        for (const auto& w : agg::load_aggregation(nca, {}, cache).warnings) all += w + "\n";
        return all;
    }
    std::string error(const std::string& nca) const {
        try {
            open_aggregation(nca, {}, agg::DatasetCache::shared());
        } catch (const Error& e) {
            return e.what();
        }
        return "(no error)";
    }
};

std::vector<float> read_v(const std::string& nca) {
    std::vector<float> got(12);
    open_aggregation(nca, {}, agg::DatasetCache::shared())->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data());
    return got;
}

const std::vector<float> kWant{0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105};

const char* kParts = R"("Partitions": [
  {"index": [0], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}},
  {"index": [1], "location": [[2, 4], [0, 3]], "subarray": {"file": "b.nc", "ncvar": "p", "shape": [2, 3]}}])";

}  // namespace

TEST(NcaStreaming, PartitionsBeforeTheMatrixAreReadWithTheMatrixThatFollows) {
    TwoParts t;
    // pmshape [1] after the list: index [1] must be judged against it (second pass).
    auto nca = t.write(std::string("{") + kParts + R"(, "pmshape": [1], "pmdimensions": ["x"]})");
    EXPECT_EQ(read_v(nca), kWant);
    auto w = t.warnings(nca);
    EXPECT_CONTAINS(w, "v:nca_array Partitions: 2 partitions but pmshape has room for 1");
    EXPECT_CONTAINS(w, "v:nca_array Partitions[1].index: value 1 at 0 outside pmshape 1");
    EXPECT_EQ(w.find("Partitions[0].index"), std::string::npos) << w;
}

TEST(NcaStreaming, PseudoJsonWithPartitionsFirstReadsTheSame) {
    TwoParts t;
    std::string j = std::string("{") + kParts + R"(, "pmshape": [2], "pmdimensions": ["x"]})";
    for (char& c : j)
        if (c == '"') c = '\'';
    EXPECT_EQ(read_v(t.write(j)), kWant);
}

TEST(NcaStreaming, RepeatedPartitionsListIsRefused) {
    TwoParts t;
    auto nca = t.write(std::string("{") + kParts + ", " + kParts + "}");
    EXPECT_CONTAINS(t.error(nca), "agg.nca: v:nca_array Partitions: given twice");
}

TEST(NcaStreaming, FirstPartitionWithoutLocationIsRefusedOnceASecondFollows) {
    TwoParts t;
    std::string j = std::string("{") + kParts + "}";
    j.replace(j.find(R"("location": [[0, 2], [0, 3]], )"), 30, "");
    EXPECT_CONTAINS(t.error(t.write(j)), "v:nca_array Partitions[0].location: missing (only a single partition may omit it)");
}

TEST(NcaStreaming, FirstPartitionWithoutIndexWarnsOnceASecondFollows) {
    TwoParts t;
    std::string j = std::string(R"({"pmshape": [2], "pmdimensions": ["x"], )") + kParts + "}";
    j.replace(j.find(R"("index": [0], )"), 14, "");
    auto nca = t.write(j);
    EXPECT_EQ(read_v(nca), kWant);
    EXPECT_CONTAINS(t.warnings(nca), "v:nca_array Partitions[0]: no index (location alone places it)");
}

TEST(NcaStreaming, MaxFragmentsCountsEveryPartition) {
    TwoParts t;
    AggregationOptions o;
    o.limits.max_fragments = 1;
    std::string m;
    try {
        open_aggregation(t.write(std::string("{") + kParts + "}"), o, agg::DatasetCache::shared());
    } catch (const Error& e) {
        m = e.what();
    }
    EXPECT_CONTAINS(m, "Partitions: 2 partitions exceed the limit max_fragments=1");
}

// The shortcut for lexically normal relative names ("dir/file.nc") gives what the
// general lexical normalisation gives; the other names take the general path.
TEST(NcaStreaming, NormalRelativeNamesResolveLikeTheGeneralPath) {
    for (const std::string agg : {"/data/run/agg.nca", "/agg.nca"}) {
        agg::PathPolicy policy(agg, {"/"}, {});
        const std::string folder = agg == "/agg.nca" ? "" : "/data/run";
        for (const std::string name : {"p.nc", "parts/p_1.nc", "a/b/c.nc", "./p.nc", "a/../p.nc", "a//p.nc", "..p.nc", "p..nc"})
            EXPECT_EQ(policy.resolve(name, false, ""), lexically_normal_absolute(folder + "/" + name)) << agg << " " << name;
    }
    agg::PathPolicy confined("/data/run/agg.nca", {}, {});
    EXPECT_THROW(confined.resolve("../other/p.nc", false, ""), std::runtime_error);
    EXPECT_EQ(confined.resolve("sub/p.nc", false, ""), "/data/run/sub/p.nc");
}

// The streaming parser hands on exactly the top-level list's elements, in
// order and whole, and builds everything else as nlohmann::json::parse would.
TEST(NcaStreaming, StreamedJsonHandsOnTopLevelListElementsOnly) {
    const std::string text =
        R"({"a": {"Partitions": [1, 2]}, "Partitions": [{"x": [1, [2, {"y": null}]]}, 3, "s", [], {}, )"
        R"({"k": 1, "b": [-2, 2.5, true, false], "k": {"r": "\u00e9\n"}}], "z": [4]})";
    std::vector<nlohmann::json> seen;
    agg::StreamedList list;
    agg::StreamCallbacks callbacks{[&](const nlohmann::json& root) { EXPECT_EQ(root.size(), 2u) << root.dump(); },
                                   [&](uint64_t i, agg::FlatJson::Ref e) {
                                       EXPECT_EQ(i, seen.size());
                                       seen.push_back(e.to_json());
                                   }};
    nlohmann::json root = agg::parse_json_streaming(text, "Partitions", callbacks, list);
    nlohmann::json whole = nlohmann::json::parse(text);
    EXPECT_EQ(nlohmann::json(seen), whole["Partitions"]);
    EXPECT_TRUE(list.seen);
    EXPECT_FALSE(list.repeated);
    EXPECT_EQ(list.count, 6u);
    whole["Partitions"] = nlohmann::json::array();
    EXPECT_EQ(root, whole);
    agg::StreamCallbacks ignore{nullptr, [](uint64_t, agg::FlatJson::Ref) {}};
    EXPECT_THROW(agg::parse_json_streaming(R"({"Partitions": [1, }")", "Partitions", ignore, list),
                 nlohmann::json::parse_error);
}

// A flat value answers as nlohmann::json::parse's tree of the same text does:
// kinds, numbers as cast, the last of a repeated key, members in its order.
TEST(NcaStreaming, FlatJsonAnswersAsNlohmannsTree) {
    const std::string text =
        R"({"z": 1, "n": null, "u": 18446744073709551615, "i": -3, "f": 2.0, "s": "a\"b", "z": [1, {"q": []}],)"
        R"( "o": {"b": true, "a": false}, "e": {}})";
    const nlohmann::json tree = nlohmann::json::parse(text);
    auto check = [&](agg::FlatJson::Ref root) {
        EXPECT_EQ(root.to_json(), tree);
        EXPECT_EQ(root.dump(), tree.dump());
        EXPECT_EQ(root.size(), 9u);  // members in the text, the repeated key twice
        EXPECT_TRUE(root.find("z").is_array());  // the last "z"
        EXPECT_EQ(root.find("z").size(), 2u);
        EXPECT_FALSE(root.find("missing"));
        EXPECT_TRUE(root.find("n").is_null());
        EXPECT_TRUE(root.find("u").is_number_unsigned());
        EXPECT_EQ(root.find("u").get_uint64(), tree["u"].get<uint64_t>());
        EXPECT_TRUE(root.find("i").is_number_integer() && !root.find("i").is_number_unsigned());
        EXPECT_EQ(root.find("i").get_int64(), -3);
        EXPECT_EQ(root.find("i").get_uint64(), tree["i"].get<uint64_t>());  // cast as nlohmann casts
        EXPECT_TRUE(root.find("f").is_number_float());
        EXPECT_EQ(root.find("f").get_double(), 2.0);
        EXPECT_EQ(root.find("s").str(), tree["s"].get<std::string>());
        std::vector<std::string> keys;
        for (auto m : root.sorted_members()) keys.emplace_back(m.key());
        std::vector<std::string> tree_keys;
        for (auto it = tree.begin(); it != tree.end(); ++it) tree_keys.push_back(it.key());
        EXPECT_EQ(keys, tree_keys);
        EXPECT_EQ(root.sorted_members().back().size(), 2u);  // "z": the last value of the repeated key
    };
    // Streamed twice in one list: the second element reuses the first's storage.
    agg::StreamedList list;
    agg::StreamCallbacks callbacks{nullptr, [&](uint64_t, agg::FlatJson::Ref e) { check(e); }};
    agg::parse_json_streaming("{\"L\": [" + text + ", " + text + "]}", "L", callbacks, list);
    EXPECT_EQ(list.count, 2u);
    agg::FlatJson copy;  // and built from a tree
    copy.assign(tree);
    EXPECT_EQ(copy.root().to_json(), tree);
}

