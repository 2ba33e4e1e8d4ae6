// Bad aggregation metadata and broken partitions: every error names the file,
// the JSON path and the reason; nothing is filled silently. Also the small
// parsers (part grammar, lenient JSON, units, paths) against hand-computed values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/model/error.hpp"
#include "cli/commands.hpp"
#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/json/lenient_json.hpp"
#include "aggregation/json/nca_parser.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

// An NCA file with dims x=4, y=3 and a float master v(x, y) described by json.
std::string write_nca(const std::string& dir, const std::string& json, const std::string& dims = "x y") {
    std::string path = dir + "/agg.nca";
    test::NcVarSpec v{"v", NC_FLOAT, {}, {{"cf_role", "nca_variable"}, {"nca_dimensions", dims}, {"nca_array", json}, {"units", "K"}}, {}};
    test::nc_write(path, {{"x", 4}, {"y", 3}, {"one", 1}}, {v});
    return path;
}

void write_part(const std::string& path, size_t nx, size_t ny, double base, nc_type t = NC_FLOAT) {
    std::vector<double> vals;
    for (size_t i = 0; i < nx * ny; ++i) vals.push_back(base + static_cast<double>(i));
    if (t == NC_CHAR) vals.clear();  // text: left at its fill
    test::nc_write(path, {{"a", nx}, {"b", ny}}, {test::NcVarSpec{"p", t, {"a", "b"}, {}, vals}});
}

std::string error_of(const std::string& path, const AggregationOptions& o = {}) {
    try {
        open_aggregation(path, o, agg::DatasetCache::shared());
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string read_error(const std::string& path, const AggregationOptions& o = {}) {
    auto ds = open_aggregation(path, o, agg::DatasetCache::shared());
    std::vector<float> buf(12);
    try {
        ds->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, buf.data());
    } catch (const SourceError& e) {
        return e.what();
    }
    return "(no error)";
}

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

const char* kTwoParts = R"({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [
  {"index": [0], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}},
  {"index": [1], "location": [[2, 4], [0, 3]], "subarray": {"file": "b.nc", "ncvar": "p", "shape": [2, 3]}}]})";

}  // namespace

TEST(AggregationBadInput, GoodTwoPartitionFileReads) {
    auto dir = test::fresh_dir("bad_good");
    write_part(dir + "/a.nc", 2, 3, 0);
    write_part(dir + "/b.nc", 2, 3, 100);
    auto ds = open_aggregation(write_nca(dir, kTwoParts), {}, agg::DatasetCache::shared());
    std::vector<float> got(12);
    ds->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data());
    EXPECT_EQ(got, (std::vector<float>{0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105}));
}

TEST(AggregationBadInput, MalformedJsonNamesVariableAndPosition) {
    auto dir = test::fresh_dir("bad_json");
    auto m = error_of(write_nca(dir, "{'Partitions': [{'location': [[0, 4] [0, 3]]}]}"));
    EXPECT_CONTAINS(m, "agg.nca: v:nca_array: at character 37:");
}

TEST(AggregationBadInput, LocationOutsideTheMaster) {
    auto dir = test::fresh_dir("bad_loc");
    std::string j = kTwoParts;
    j.replace(j.find("[[2, 4], [0, 3]]"), 16, "[[3, 5], [0, 3]]");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)), "v:nca_array Partitions[1].location[0]: [3, 5] runs past the master dimension 'x' of length 4");
}

TEST(AggregationBadInput, HugeFloatIndexIsAnError) {
    // Found by nca_json_fuzz: 1e308 was cast to uint64 (undefined behaviour).
    auto dir = test::fresh_dir("bad_float_index");
    for (const char* huge : {"1e308", "18446744073709551616.0"}) {
        std::string j = kTwoParts;
        const std::string shape = "\"shape\": [2, 3]";
        j.replace(j.find(shape), shape.size(), "\"shape\": [2, " + std::string(huge) + "]");
        EXPECT_CONTAINS(error_of(write_nca(dir, j)), "v:nca_array Partitions[0].subarray.shape[1]: expected a non-negative integer");
    }
}

TEST(AggregationBadInput, ShapeMismatch) {
    auto dir = test::fresh_dir("bad_shape");
    std::string j = kTwoParts;
    j.replace(j.find("[[2, 4], [0, 3]]"), 16, "[[2, 4], [0, 1]]");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)), "v:nca_array Partitions[1].location[1]: [0, 1] spans 2 (inclusive) or 1 (half-open) indices of 'y' but the partition's data has 3");
}

// Locations place partitions; pmshape and index only validate: a
// disagreement is a warning from check and the data are served by location.
TEST(AggregationBadInput, PmshapeOrIndexDisagreementWarnsAndLocationPlaces) {
    auto dir = test::fresh_dir("bad_pm");
    write_part(dir + "/a.nc", 2, 3, 0);
    write_part(dir + "/b.nc", 2, 3, 100);
    const std::vector<float> want{0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105};
    auto expect_served_with_warning = [&](const std::string& j, const std::string& warning) {
        SCOPED_TRACE(j);
        std::string nca = write_nca(dir, j);
        std::vector<float> got(12);
        ASSERT_NO_THROW(open_aggregation(nca, {}, agg::DatasetCache::shared())->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data()));
        EXPECT_EQ(got, want);
        agg::DatasetCache cache(4);
        std::string warnings;
        for (const auto& w : agg::load_aggregation(nca, {}, cache).warnings) warnings += w + "\n";
        EXPECT_CONTAINS(warnings, warning);
    };
    std::string j = kTwoParts;
    j.replace(j.find("\"pmshape\": [2]"), 14, "\"pmshape\": [1]");
    expect_served_with_warning(j, "v:nca_array Partitions: 2 partitions but pmshape has room for 1");
    j = kTwoParts;
    j.replace(j.find("\"index\": [1]"), 12, "\"index\": [5]");
    expect_served_with_warning(j, "Partitions[1].index: value 5 at 0 outside pmshape 2 (ignored: location places the partition)");
    j = kTwoParts;
    j.replace(j.find("\"index\": [1]"), 12, "\"index\": [0]");
    expect_served_with_warning(j, "Partitions[1].index: repeats the index of another partition");
    j = kTwoParts;
    j.replace(j.find("\"index\": [1]"), 12, "\"index\": [1, 0]");
    expect_served_with_warning(j, "Partitions[1].index: has 2 entries but pmshape has 1");
}

TEST(AggregationBadInput, OverlappingLocationsAreStillRefused) {
    auto dir = test::fresh_dir("bad_overlap");
    write_part(dir + "/a.nc", 2, 3, 0);
    write_part(dir + "/b.nc", 2, 3, 100);
    std::string j = kTwoParts;
    j.replace(j.find("[[2, 4], [0, 3]]"), 16, "[[1, 3], [0, 3]]");
    j.replace(j.find("\"index\": [1]"), 12, "\"index\": [0]");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)), "overlap");
}

// One partition covering the master, no pmshape/pmdimensions: index [0],
// index [] and no index all read the partition's values.
TEST(AggregationBadInput, SinglePartitionWithoutPmshapeAnyIndex) {
    auto dir = test::fresh_dir("single_part");
    write_part(dir + "/a.nc", 4, 3, 10);
    std::vector<float> want(12);
    for (size_t i = 0; i < 12; ++i) want[i] = 10.0f + static_cast<float>(i);
    for (std::string index : {"\"index\": [0], ", "\"index\": [], ", ""}) {
        SCOPED_TRACE(index);
        std::string j = "{\"Partitions\": [{" + index +
                        "\"location\": [[0, 4], [0, 3]], \"subarray\": {\"file\": \"a.nc\", \"ncvar\": \"p\", \"shape\": [4, 3]}}]}";
        std::vector<float> got(12);
        ASSERT_NO_THROW(open_aggregation(write_nca(dir, j), {}, agg::DatasetCache::shared())->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data()));
        EXPECT_EQ(got, want);
    }
}

TEST(AggregationBadInput, UnknownDimensionNames) {
    auto dir = test::fresh_dir("bad_dims");
    EXPECT_CONTAINS(error_of(write_nca(dir, kTwoParts, "x nope")), "v:nca_dimensions: unknown dimension 'nope'");
    std::string j = kTwoParts;
    j.replace(j.find("\"index\": [1],"), 13, "\"index\": [1], \"pdimensions\": [\"x\", \"zz\"],");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)), "v:nca_array Partitions[1].pdimensions[1]: unknown dimension name 'zz'");
    j = kTwoParts;
    j.replace(j.find("\"pmdimensions\": [\"x\"]"), 21, "\"pmdimensions\": [\"q\"]");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)), "v:nca_array pmdimensions[0]: unknown dimension name 'q'");
}

TEST(AggregationBadInput, EscapingPathsAreRefused) {
    auto dir = test::fresh_dir("bad_escape");
    std::filesystem::create_directories(dir + "/inner");
    std::filesystem::create_directories(dir + "/outside");
    write_part(dir + "/outside/real.nc", 2, 3, 0);
    std::string j = kTwoParts;
    j.replace(j.find("\"a.nc\""), 6, "\"../outside/real.nc\"");
    EXPECT_CONTAINS(error_of(write_nca(dir + "/inner", j)), "v:nca_array Partitions[0].subarray.file: path " + dir + "/outside/real.nc");
    EXPECT_CONTAINS(error_of(write_nca(dir + "/inner", j)), "outside the allowed roots");
    j = kTwoParts;
    j.replace(j.find("\"a.nc\""), 6, "\"/etc/shadow\"");
    EXPECT_CONTAINS(error_of(write_nca(dir + "/inner", j)), "Partitions[0].subarray.file: path /etc/shadow (from \"/etc/shadow\") is outside the allowed roots");
    // An extra root allows it.
    AggregationOptions o;
    o.allowed_roots = {dir};
    j = kTwoParts;
    j.replace(j.find("\"a.nc\""), 6, "\"../outside/real.nc\"");
    EXPECT_EQ(error_of(write_nca(dir + "/inner", j), o), "(no error)");
    // A symlink inside the root that leads outside: refused when opened.
    std::filesystem::create_symlink(dir + "/outside/real.nc", dir + "/inner/a.nc");
    write_part(dir + "/inner/b.nc", 2, 3, 0);
    auto m = read_error(write_nca(dir + "/inner", kTwoParts));
    EXPECT_CONTAINS(m, dir + "/inner/a.nc: resolves (through symlinks) outside the allowed roots");
}

TEST(AggregationBadInput, OverlappingPartitions) {
    auto dir = test::fresh_dir("bad_overlap");
    std::string j = kTwoParts;
    j.replace(j.find("[[2, 4], [0, 3]]"), 16, "[[1, 3], [0, 3]]");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)), "v:nca_array Partitions[1]: overlaps Partitions[0]");
}

TEST(AggregationBadInput, BrokenPartitionsRaiseSourceErrorNamingFileAndReason) {
    auto dir = test::fresh_dir("bad_parts");
    auto nca = write_nca(dir, kTwoParts);
    write_part(dir + "/a.nc", 2, 3, 0);
    EXPECT_CONTAINS(read_error(nca), dir + "/b.nc: does not exist");  // missing file
    std::filesystem::copy_file(dir + "/agg.nca", dir + "/b.nc");          // no variable p
    EXPECT_CONTAINS(read_error(nca), dir + "/b.nc: has no variable 'p' (partition v:nca_array Partitions[1])");
    std::filesystem::remove(dir + "/b.nc");
    write_part(dir + "/b.nc", 3, 2, 0);  // wrong shape
    EXPECT_CONTAINS(read_error(nca), dir + "/b.nc: variable 'p' has shape [3, 2] but the aggregation declares [2, 3]");
    std::filesystem::remove(dir + "/b.nc");
    write_part(dir + "/b.nc", 2, 3, 0, NC_CHAR);  // type that does not convert
    EXPECT_CONTAINS(read_error(nca), "type char cannot be converted to the master type float");
    std::filesystem::remove(dir + "/b.nc");
    {
        std::FILE* f = std::fopen((dir + "/b.nc").c_str(), "w");
        std::fputs("not a netCDF file", f);
        std::fclose(f);
    }
    EXPECT_CONTAINS(read_error(nca), dir + "/b.nc: ");  // unreadable
    // A changed partition is noticed (new identity -> reopened).
    std::filesystem::remove(dir + "/b.nc");
    write_part(dir + "/b.tmp", 2, 3, 500);
    std::filesystem::rename(dir + "/b.tmp", dir + "/b.nc");
    auto ds = open_aggregation(nca, {}, agg::DatasetCache::shared());
    std::vector<float> got(12);
    ds->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data());
    EXPECT_EQ(got[6], 500.f);
    write_part(dir + "/b.tmp", 2, 3, 700);
    std::filesystem::rename(dir + "/b.tmp", dir + "/b.nc");
    ds->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data());
    EXPECT_EQ(got[6], 700.f);
}

TEST(AggregationParsers, PartGrammarByGeneration) {
    auto p = agg::parse_part("[(2, 5, 1), [1, 3, 4, 7], (0, 11, 2)]", false);  // 0.2 rules
    ASSERT_EQ(p.size(), 3u);
    EXPECT_FALSE(p[0].is_list);
    EXPECT_EQ(p[0].size(), 4u);
    EXPECT_EQ(p[0].at(3), 5u);
    EXPECT_TRUE(p[1].is_list);
    EXPECT_EQ(p[1].list, (std::vector<uint64_t>{1, 3, 4, 7}));
    EXPECT_EQ(p[2].size(), 6u);
    EXPECT_EQ(p[2].at(5), 10u);
    auto q = agg::parse_part("[[2, 5, 1], (1, 3, 4, 7), [10, 4, -2]]", true);  // 0.4 rules
    EXPECT_EQ(q[0].size(), 4u);
    EXPECT_EQ(q[1].list, (std::vector<uint64_t>{1, 3, 4, 7}));
    EXPECT_EQ(q[2].size(), 4u);
    EXPECT_EQ(q[2].at(0), 10u);
    EXPECT_EQ(q[2].at(3), 4u);
    EXPECT_TRUE(agg::parse_part("[]", true).empty());
    EXPECT_EQ(agg::parse_part("[(3,)]", true)[0].list, (std::vector<uint64_t>{3}));
    EXPECT_THROW(agg::parse_part("[(1, 2, 0)]", false), std::runtime_error);
    EXPECT_THROW(agg::parse_part("[(1, 2]", false), std::runtime_error);
}

TEST(AggregationParsers, LenientJson) {
    auto j = agg::parse_lenient_json("{'a': ['x', \"y\"], 'b': True, 'c': None, 'd': 'it\\'s'}");
    EXPECT_EQ(j["a"][0], "x");
    EXPECT_EQ(j["a"][1], "y");
    EXPECT_EQ(j["b"], true);
    EXPECT_TRUE(j["c"].is_null());
    EXPECT_EQ(j["d"], "it's");
    try {
        agg::parse_lenient_json("{'a': [1, 2}");
        FAIL();
    } catch (const agg::JsonTextError& e) {
        EXPECT_EQ(e.position, 11u);
    }
    // Found by nca_json_fuzz: numbers beyond double's range (strict and
    // pseudo-JSON) escaped as nlohmann's out_of_range.
    EXPECT_THROW(agg::parse_lenient_json("{\"a\": [1e999]}"), agg::JsonTextError);
    EXPECT_THROW(agg::parse_lenient_json("{'a': [8, 5, 1e3083]}"), agg::JsonTextError);
}

TEST(AggregationParsers, UnitsAgainstHandComputedValues) {
    auto c = agg::units_converter("K @ 273.15", "", "K", "");
    EXPECT_DOUBLE_EQ(c.scale, 1.0);
    EXPECT_NEAR(c.offset, 273.15, 1e-9);
    c = agg::units_converter("days since 2002-01-01", "", "days since 2001-01-01", "standard");
    EXPECT_NEAR(c.offset, 365, 1e-9);
    c = agg::units_converter("days since 2000-03-01", "360_day", "days since 2000-01-01", "360_day");
    EXPECT_NEAR(c.offset, 60, 1e-9);
    c = agg::units_converter("days since 2000-03-01", "noleap", "days since 2000-01-01", "noleap");
    EXPECT_NEAR(c.offset, 59, 1e-9);
    c = agg::units_converter("hours since 2000-01-02", "proleptic_gregorian", "days since 2000-01-01", "proleptic_gregorian");
    EXPECT_NEAR(c.scale, 1.0 / 24, 1e-12);
    EXPECT_NEAR(c.offset, 1, 1e-9);
    c = agg::units_converter("cm", "", "m", "");
    EXPECT_NEAR(c.scale, 0.01, 1e-15);
    EXPECT_TRUE(agg::units_converter("", "", "m", "").is_identity());
    EXPECT_THROW(agg::units_converter("m", "", "K", ""), std::runtime_error);
    EXPECT_THROW(agg::units_converter("days since 2000-01-01", "360_day", "days since 2000-01-01", "noleap"), std::runtime_error);
    EXPECT_THROW(agg::units_converter("furlongs per fortnight squared", "", "m", ""), std::runtime_error);
}

TEST(AggregationParsers, ConventionsAndDetection) {
    EXPECT_EQ(agg::conventions_without_aggregation("CF-1.5 NCA"), "CF-1.5");
    EXPECT_EQ(agg::conventions_without_aggregation("CF-1.7 CFA-0.4"), "CF-1.7");
    EXPECT_EQ(agg::conventions_without_aggregation("CF-1.7, CFA"), "CF-1.7");
    auto dir = test::fresh_dir("detect");
    {
        std::FILE* f = std::fopen((dir + "/text.nc").c_str(), "w");
        std::fputs("hello", f);
        std::fclose(f);
    }
    EXPECT_FALSE(is_aggregation_file(dir + "/text.nc"));
    EXPECT_FALSE(is_aggregation_file(dir + "/missing.nc"));
    EXPECT_TRUE(is_aggregation_file(write_nca(dir, kTwoParts)));
}

// ---- Hostile numbers, depths and sizes ----

namespace {

// Peak RSS since the last reset, in KiB (writing 5 to clear_refs resets VmHWM).
uint64_t reset_and_read_hwm_kib(bool reset) {
    if (reset) std::ofstream("/proc/self/clear_refs") << "5";
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
    return 0;
}

}  // namespace

TEST(AggregationHostile, LocationNear2To64CannotWrapPastTheRangeCheck) {
    auto dir = test::fresh_dir("hostile_wrap");
    write_part(dir + "/a.nc", 2, 3, 0);
    write_part(dir + "/b.nc", 2, 3, 100);
    std::string j = kTwoParts;
    // No declared shape: the convention follows the other partition (half-open); both ranges wrap.
    j.replace(j.find("[[2, 4], [0, 3]]"), 16, "[[18446744073709551615, 18446744073709551615], [0, 3]]");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)), "v:nca_array Partitions[1].location[0]");
    // Inclusive (as partition 0 reads) without a shape: count 1, and start + 1 wraps to 0.
    j = kTwoParts;
    j.replace(j.find("[[0, 2], [0, 3]]"), 16, "[[0, 1], [0, 2]]");
    j.replace(j.find("[[2, 4], [0, 3]]"), 16, "[[18446744073709551615, 18446744073709551615], [0, 2]]");
    const std::string sub_b = R"("file": "b.nc", "ncvar": "p", "shape": [2, 3])";
    j.replace(j.find(sub_b), sub_b.size(), R"("file": "b.nc", "ncvar": "p")");
    EXPECT_CONTAINS(error_of(write_nca(dir, j)),
                    "v:nca_array Partitions[1].location[0]: [18446744073709551615, 18446744073709551615] runs past the "
                    "master dimension 'x' of length 4");
}

TEST(AggregationHostile, JsonNestedDeeperThan256IsRefusedBeforeParsing) {
    auto dir = test::fresh_dir("hostile_deep");
    const std::string deep = "{'Partitions': " + std::string(100000, '[') + std::string(100000, ']') + "}";
    EXPECT_CONTAINS(error_of(write_nca(dir, deep)), "v:nca_array: at character 270: nested deeper than 256 levels");
    // 256 levels are fine for the depth guard (the document is then refused for its content).
    const std::string ok = "{'Partitions': " + std::string(255, '[') + std::string(255, ']') + "}";
    EXPECT_EQ(error_of(write_nca(dir, ok)).find("nested deeper"), std::string::npos);
    // Brackets inside strings do not count.
    EXPECT_NO_THROW(agg::parse_lenient_json("{'a': '" + std::string(1000, '[') + "'}"));
}

TEST(AggregationHostile, ReferenceYearsOutOfRangeAreErrorsNotWrappedValues) {
    for (const char* cal : {"360_day", "365_day", "366_day", "julian", "proleptic_gregorian", "standard"}) {
        try {
            agg::units_converter("days since 9000000000000000000-01-01", cal, "days since 2000-01-01", cal);
            ADD_FAILURE() << cal << ": accepted";
        } catch (const std::exception& e) {
            EXPECT_CONTAINS(std::string(e.what()), "\"days since 9000000000000000000-01-01\": reference year out of range");
        }
    }
    EXPECT_THROW(agg::units_converter("days since 1e400-01-01", "360_day", "days since 2000-01-01", "360_day"),
                 std::runtime_error);
    // In range: 1000 years of 360 days.
    EXPECT_EQ(agg::units_converter("days since 3000-01-01", "360_day", "days since 2000-01-01", "360_day").offset, 360000.0);
}

TEST(AggregationHostile, FragmentAndMetadataLimitsNameTheFileAndTheLimit) {
    auto dir = test::fresh_dir("hostile_limits");
    write_part(dir + "/a.nc", 2, 3, 0);
    write_part(dir + "/b.nc", 2, 3, 100);
    const std::string path = write_nca(dir, kTwoParts);
    AggregationOptions o;
    o.limits.max_fragments = 1;
    EXPECT_CONTAINS(error_of(path, o), "agg.nca: v:nca_array Partitions: 2 partitions exceed the limit max_fragments=1");
    o = {};
    o.limits.max_metadata_bytes = 100;
    EXPECT_CONTAINS(error_of(path, o), "agg.nca: v:nca_array: ");
    EXPECT_CONTAINS(error_of(path, o), "bytes of JSON exceed the limit max_metadata=100");
    EXPECT_EQ(error_of(path), "(no error)");  // the defaults allow it
}

TEST(AggregationHostile, SparsePartListReadsOnlyTheNeededRows) {
    // Partition a.nc holds N rows; part picks rows 0 and N-1. The old source box
    // spanned all N rows (24 MiB) for a 24-byte read.
    auto dir = test::fresh_dir("hostile_sparse");
    const size_t n = size_t{1} << 21;
    write_part(dir + "/a.nc", n, 3, 0);
    write_part(dir + "/b.nc", 2, 3, 100);
    std::string j = kTwoParts;
    const std::string sub_a = R"("subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]})";
    j.replace(j.find(sub_a), sub_a.size(),
              R"("part": "[[0, )" + std::to_string(n - 1) + R"(], (0, 2, 1)]", "subarray": {"file": "a.nc", "ncvar": "p", "shape": [)" +
                  std::to_string(n) + ", 3]}");
    auto ds = open_aggregation(write_nca(dir, j), {}, agg::DatasetCache::shared());
    std::vector<float> got(12);
    reset_and_read_hwm_kib(true);
    const uint64_t before = reset_and_read_hwm_kib(false);
    ds->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data());
    const uint64_t growth = reset_and_read_hwm_kib(false) - before;
    const float last = static_cast<float>((n - 1) * 3);  // write_part: value = row * 3 + column
    EXPECT_EQ(got, (std::vector<float>{0, 1, 2, last, last + 1, last + 2, 100, 101, 102, 103, 104, 105}));
    EXPECT_LT(growth, 8u * 1024) << "KiB of peak RSS growth for a 48-byte read";

    // Descending rows, columns reversed by a list: each run is a single index.
    std::string k = j;
    const std::string part = "[[0, " + std::to_string(n - 1) + "], (0, 2, 1)]";
    k.replace(k.find(part), part.size(), "[[" + std::to_string(n - 1) + ", 0], [2, 1, 0]]");
    auto dir2 = test::fresh_dir("hostile_sparse_desc");
    std::filesystem::copy_file(dir + "/a.nc", dir2 + "/a.nc");
    std::filesystem::copy_file(dir + "/b.nc", dir2 + "/b.nc");
    auto ds2 = open_aggregation(write_nca(dir2, k), {}, agg::DatasetCache::shared());
    ds2->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, got.data());
    EXPECT_EQ(got, (std::vector<float>{last + 2, last + 1, last, 2, 1, 0, 100, 101, 102, 103, 104, 105}));
    std::vector<float> one(1);
    ds2->find_variable("v")->source->read_linear(4, 1, ByteOrder::Native, one.data());  // v[1][1]
    EXPECT_EQ(one[0], 1.0f);
}

TEST(AggregationHostile, CheckGoesOnPastABadNumberAndNamesTheFile) {
    auto bad_dir = test::fresh_dir("hostile_check_bad"), next_dir = test::fresh_dir("hostile_check_next");
    write_part(bad_dir + "/a.nc", 2, 3, 0);
    write_part(bad_dir + "/b.nc", 2, 3, 100);
    write_part(next_dir + "/a.nc", 2, 3, 0);  // next_dir/b.nc is missing: a problem check must report
    std::string j = kTwoParts;
    j.replace(j.find("[[2, 4], [0, 3]]"), 16, "[[1e300, 4], [0, 3]]");
    const std::string bad = write_nca(bad_dir, j), next = write_nca(next_dir, kTwoParts);
    std::ostringstream out, err;
    EXPECT_EQ(ncafs::cli::run_check({bad, next}, out, err), 1);
    EXPECT_CONTAINS(out.str(), bad + ": v:nca_array Partitions[1].location[0][0]: expected a non-negative integer");
    EXPECT_CONTAINS(out.str(), next_dir + "/b.nc");  // the second file was checked too
}

// The same metadata escape-free, read by the simdjson reader, and (one "\u0070"
// for "p" in it) by nlohmann's: the same errors, word for word, and the same warnings.
TEST(AggregationBadInput, EscapeFreeAndEscapedJsonGiveTheSameMessages) {
    auto dir = test::fresh_dir("bad_escape_free_escaped");
    write_part(dir + "/a.nc", 2, 3, 0);
    write_part(dir + "/b.nc", 2, 3, 100);
    auto variant = [](std::string json, bool escaped) {
        const std::string escape_free = "\"ncvar\": \"p\"";
        if (escaped) json.replace(json.find(escape_free), escape_free.size(), "\"ncvar\": \"\\u0070\"");
        return json;
    };
    const std::string cases[] = {
        R"({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [{"index": [0], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}}, {"index": [1], "location": [[2, 5], [0, 3]], "subarray": {"file": "b.nc", "ncvar": "p", "shape": [2, 3]}}]})",
        R"({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [{"index": [0], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}}, {"index": [1], "location": [[2, 4], [0, 3]]}]})",
        R"({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [{"index": [0], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2]}}]})",
        R"({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [{"index": [0], "location": [[0, 2], [-1, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}}]})",
        R"({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [{"index": [0], "pdimensions": ["x", "q"], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}}]})",
        R"({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [{"index": [0], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}}, {"index": [1], "location": [[2, 4], [0, 3]], "subarray": {"file": "b.nc", "ncvar": "p", "shape": [2, 3]}}], "Partitions": []})",
    };
    for (const std::string& json : cases) {
        const std::string escape_free_error = error_of(write_nca(dir, variant(json, false)));
        EXPECT_NE(escape_free_error, "(no error)") << json;
        EXPECT_CONTAINS(escape_free_error, dir + "/agg.nca");
        EXPECT_EQ(error_of(write_nca(dir, variant(json, true))), escape_free_error) << json;
    }
    // A good aggregation with warnings (an index outside pmshape, an unknown key): the same warnings and values.
    const std::string warned =
        R"({"pmshape": [2], "pmdimensions": ["x"], "extra": 1, "Partitions": [{"index": [0], "location": [[0, 2], [0, 3]], "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3], "zz": 2}}, {"index": [7], "location": [[2, 4], [0, 3]], "subarray": {"file": "b.nc", "ncvar": "p", "shape": [2, 3]}}]})";
    std::vector<std::string> warnings[2];
    std::vector<float> values[2];
    for (int escaped = 0; escaped < 2; ++escaped) {
        agg::DatasetCache cache(8);
        auto loaded = agg::load_aggregation(write_nca(dir, variant(warned, escaped == 1)), AggregationOptions{}, cache);
        warnings[escaped] = loaded.warnings;
        values[escaped].resize(12);
        loaded.dataset->find_variable("v")->source->read_linear(0, 12, ByteOrder::Native, values[escaped].data());
    }
    EXPECT_EQ(warnings[0].size(), 3u);
    EXPECT_EQ(warnings[0], warnings[1]);
    EXPECT_EQ(values[0], (std::vector<float>{0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105}));
    EXPECT_EQ(values[0], values[1]);
}
