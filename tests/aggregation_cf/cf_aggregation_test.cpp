// G3/G4a/G4b/G5 readers against files equivalent to the spec examples (our
// own CDL, cfa06_examples.py, through ncgen), fragments and expected values from make_cf_cases.py
// (netCDF4-python + numpy, independent of ncafs), compared through
// make_cf_source (AggregatedSource with the CF fragment resolver).
#include <gtest/gtest.h>
#include <netcdf.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "aggregation/model/error.hpp"
#include "aggregation/terms/cf_fragment_source.hpp"
#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/check/cf_validation.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "tests/aggregation_cf/cf_test_util.hpp"

namespace fs = std::filesystem;
using namespace ncafs;
using namespace ncafs::agg;
using namespace ncafs::cftest;

namespace {

std::string cases() {
    const char* b = std::getenv("NCAFS_CF_CASES");
    return b ? b : NCAFS_CF_CASES_DIR;
}

std::string fixtures() {
    const char* f = std::getenv("NCAFS_AGG_FIXTURES");
    return f ? f : NCAFS_AGG_FIXTURES_DIR;
}

std::vector<double> expected(const std::string& name) { return nc_values(cases() + "/expected.nc", name); }

struct Opened {
    std::shared_ptr<const PathPolicy> paths;
    std::shared_ptr<const Dataset> file;
    CfAggregations parsed;
    std::map<std::string, std::shared_ptr<const AggregatedSource>> sources;
};

Opened open_cf(const std::string& path, DatasetCache& cache) {
    Opened o;
    o.paths = std::make_shared<const PathPolicy>(path, std::vector<std::string>{}, std::vector<std::pair<std::string, std::string>>{});
    o.file = cache.get(o.paths->aggregation_file());
    o.parsed = parse_cf_file(o.paths->aggregation_file(), *o.file, *o.paths);
    for (const auto& a : o.parsed.aggregates)
        o.sources[a.aggregate.name] =
            make_cf_source(a, o.paths, cache);
    return o;
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= 1e-9 * std::max(1.0, std::fabs(want[i])))) {
            if (++bad <= 5) ADD_FAILURE() << what << " element " << i << ": got " << got[i] << " want " << want[i];
        }
    EXPECT_EQ(bad, 0u) << what;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

std::string verify_error(const AggregatedSource& s, size_t i) {
    try {
        s.verify_fragment(i);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(CfGeneration3, Example1aReadsUnpacksConvertsAndInsertsSize1Dims) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example1a.nca", cache);
    ASSERT_EQ(o.parsed.aggregates.size(), 1u);
    const auto& a = o.parsed.aggregates[0];
    EXPECT_EQ(a.generation, CfGeneration::Cfa06);
    EXPECT_EQ(a.aggregate.shape, (std::vector<uint64_t>{12, 1, 73, 144}));
    ASSERT_EQ(a.aggregate.fragments.size(), 2u);
    EXPECT_EQ(a.aggregate.fragments[1].start, (std::vector<uint64_t>{6, 0, 0, 0}));
    EXPECT_EQ(a.aggregate.fragments[1].where, "temp:aggregated_data fragment [1,0,0,0]");
    EXPECT_EQ(cache.opens(), 1u) << "parsing opened a fragment";
    expect_values(read_all(*o.sources["temp"]), expected("g3_example1a"), "example1a");
    for (const char* v : {"aggregation_location", "aggregation_file", "aggregation_format", "aggregation_address"})
        EXPECT_TRUE(contains(o.parsed.hidden_variables, v)) << v;
    for (const char* d : {"f_time", "f_level", "f_latitude", "f_longitude", "i", "j"})
        EXPECT_TRUE(contains(o.parsed.hidden_dimensions, d)) << d;
    EXPECT_FALSE(contains(o.parsed.hidden_dimensions, "time"));
}

TEST(CfGeneration3, WhollyMissingFragmentReadsAsFill) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example1a_missing.nca", cache);
    EXPECT_EQ(o.parsed.aggregates[0].aggregate.fragments[1].kind, FragmentKind::Missing);
    expect_values(read_all(*o.sources["temp"]), expected("g3_example1a_missing"), "example1a missing");
}

TEST(CfGeneration3, PartialReadsAcrossFragmentsMatch) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example1a.nca", cache);
    const auto& s = *o.sources["temp"];
    auto want = expected("g3_example1a");
    std::vector<uint64_t> start{4, 0, 10, 100}, count{5, 1, 3, 7};
    std::vector<double> got(5 * 3 * 7);
    s.read(start, count, ByteOrder::Native, got.data());
    size_t k = 0;
    for (uint64_t t = 4; t < 9; ++t)
        for (uint64_t y = 10; y < 13; ++y)
            for (uint64_t x = 100; x < 107; ++x, ++k) EXPECT_DOUBLE_EQ(got[k], want[(t * 73 + y) * 144 + x]);
}

TEST(CfGeneration3, Example1bIgnoresNonStandardTermButHidesIt) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example1b.nca", cache);
    EXPECT_TRUE(contains(o.parsed.hidden_variables, "fragment_id"));
    bool warned = false;
    for (const auto& w : o.parsed.warnings) warned |= w.find("tracking_id") != std::string::npos;
    EXPECT_TRUE(warned);
}

TEST(CfGeneration3, Example1cSubstitutionAuthorityIsRefusedOnReadOnly) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example1c.nca", cache);  // listing works
    auto err = verify_error(*o.sources["temp"], 0);
    EXPECT_NE(err.find("data1"), std::string::npos) << err;
    auto local = open_cf(cases() + "/g3/example1c_local.nca", cache);
    expect_values(read_all(*local.sources["temp"]), expected("g3_example1a"), "example1c local");
}

TEST(CfGeneration3, Example2InFileFragmentAndHiding) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example2.nca", cache);
    EXPECT_EQ(o.parsed.aggregates[0].aggregate.fragments[1].kind, FragmentKind::Self);
    expect_values(read_all(*o.sources["temp"]), expected("g3_example2"), "example2");
    EXPECT_TRUE(contains(o.parsed.hidden_variables, "temp2"));
    EXPECT_TRUE(contains(o.parsed.hidden_dimensions, "time2"));
}

TEST(CfGeneration3, Example3ShapeDefectIsReported) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example3.nca", cache);
    auto err = verify_error(*o.sources["temp"], 0);
    EXPECT_NE(err.find("(12, 73, 144)"), std::string::npos) << err;
}

TEST(CfGeneration3, Example4VersionsAndDefects) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example4.nca", cache);
    const auto& a = o.parsed.aggregates[0];
    ASSERT_EQ(a.aggregate.fragments.size(), 4u);
    EXPECT_EQ(a.aggregate.fragments[1].kind, FragmentKind::Self);
    EXPECT_EQ(a.aggregate.fragments[2].path, "/local/January-June_NH.nc");  // first version (none exists)
    EXPECT_NE(verify_error(*o.sources["temp"], 1).find("(12, 73, 144)"), std::string::npos);
    EXPECT_NE(verify_error(*o.sources["temp"], 0).find("outside the allowed roots"), std::string::npos);
}

// A13 version selection stats fragment files confined to the allowed roots:
// a version behind a symlink leading out is not there, whatever it names.
TEST(CfGeneration3, VersionBehindASymlinkLeadingOutIsNotPicked) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example1a_swapped.nca", cache);
    const std::string& path = o.parsed.aggregates[0].aggregate.fragments[0].path;
    EXPECT_EQ(path.find("swapped"), std::string::npos) << path;
    EXPECT_EQ(path.substr(path.size() - 19), "/g3/January-June.nc") << path;
    expect_values(read_all(*o.sources["temp"]), expected("g3_example1a"), "example1a_swapped");
}

TEST(CfGeneration3, Example5MissingTermVariablesFail) {
    DatasetCache cache;
    try {
        open_cf(cases() + "/g3/example5.nca", cache);
        FAIL() << "no error";
    } catch (const AggregationError& e) {
        EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    }
}

TEST(CfGeneration3, Example6TypoMakesSizesDisagreeWithDimension) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example6.nca", cache);
    ASSERT_EQ(o.parsed.aggregates.size(), 1u);  // the CDL sets temp's attributes four times
    EXPECT_EQ(o.parsed.aggregates[0].aggregate.shape, std::vector<uint64_t>{3});
    bool warned = false;
    for (const auto& w : o.parsed.warnings) warned |= w.find("length 15") != std::string::npos;
    EXPECT_TRUE(warned);
}

TEST(CfGeneration3, Example7PackedMasterPassesRawValues) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g3/example7_root.nca", cache);
    auto got = read_all(*o.sources["temp"]);
    expect_values(got, expected("g3_example7_root"), "example7");
    EXPECT_EQ(got.back(), 3.0);  // ncgen wrapped 65539 (the example's defect)
    // The example as written: fragments in the group /aggregation.
    auto grouped = open_cf(cases() + "/g3/example7.nca", cache);
    expect_values(read_all(*grouped.sources["temp"]), expected("g3_example7_root"), "example7 (grouped)");
}

TEST(CfGeneration4a, TestrainLayoutReadsAndVerifyFindsMisorder) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g4a/testrain_ordered.nca", cache);
    EXPECT_EQ(o.parsed.aggregates[0].generation, CfGeneration::Draft2024);
    expect_values(read_all(*o.sources["p"]), expected("g4a_ordered"), "testrain ordered");
    auto good = check_cf_aggregation(cases() + "/g4a/testrain_ordered.nca", {}, cache, true);
    EXPECT_TRUE(good.problems.empty()) << good.problems.front();
    auto bad = check_cf_aggregation(cases() + "/g4a/testrain_misordered.nca", {}, cache, true);
    ASSERT_FALSE(bad.problems.empty());
    bool named = false;
    for (const auto& p : bad.problems) named |= p.find("example8.nc") != std::string::npos && p.find("out of order") != std::string::npos;
    EXPECT_TRUE(named) << bad.problems.front();
    auto unverified = check_cf_aggregation(cases() + "/g4a/testrain_misordered.nca", {}, cache, false);
    EXPECT_TRUE(unverified.problems.empty());
}

TEST(CfGeneration4b, Netcdf3CharTermsAndUniqueValue) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g4b/cfdm112.nc", cache);
    EXPECT_EQ(o.parsed.aggregates[0].generation, CfGeneration::Cfdm112);
    expect_values(read_all(*o.sources["x"]), expected("g4b_x"), "cfdm112 x");
    expect_values(read_all(*o.sources["c"]), expected("g4b_c"), "cfdm112 c");
    EXPECT_TRUE(contains(o.parsed.hidden_dimensions, "strlen"));
}

TEST(CfGeneration5, Example23) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g5/example_2_3.nc", cache);
    const auto& a = o.parsed.aggregates[0].aggregate;
    EXPECT_EQ(a.fragments[3].start, (std::vector<uint64_t>{0, 90, 180}));
    EXPECT_EQ(a.fragments[3].count, (std::vector<uint64_t>{17, 45, 180}));
    expect_values(read_all(*o.sources["temperature"]), expected("g5_example_2_3"), "example 2.3");
}

TEST(CfGeneration5, ExampleL1RelativeUrisReferenceTimeAndCoordinate) {
    DatasetCache cache;
    for (const char* f : {"/g5/example_L1.nc", "/g5/classic_L1.nc"}) {
        auto o = open_cf(cases() + f, cache);
        expect_values(read_all(*o.sources["temperature"]), expected("g5_L1"), f);
    }
    auto o = open_cf(cases() + "/g5/example_L1.nc", cache);
    expect_values(read_all(*o.sources["time"]), expected("g5_L1_time"), "L1 time (+365 days)");
    EXPECT_EQ(o.sources["time"]->aggregate().shape, std::vector<uint64_t>{12});
    for (const char* d : {"f_time", "j", "i", "j_time"}) EXPECT_TRUE(contains(o.parsed.hidden_dimensions, d)) << d;
}

TEST(CfGeneration5, ExampleL2OtherSchemesFailOnReadNamingTheUri) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g5/example_L2.nc", cache);
    EXPECT_EQ(verify_error(*o.sources["temperature"], 0), "");
    auto err = verify_error(*o.sources["temperature"], 1);
    // https is read through remote/ now: this host does not resolve, and the error names the URI.
    EXPECT_NE(err.find("https:///remote.host/data/April-December.nc"), std::string::npos) << err;
    expect_values(read_all(*o.sources["time"]), expected("g5_L1_time"), "L2 time");
    std::vector<double> first(3 * 73 * 144);
    std::vector<uint64_t> start{0, 0, 0, 0}, count{3, 1, 73, 144};
    o.sources["temperature"]->read(start, count, ByteOrder::Native, first.data());  // fragment 0 alone reads
}

TEST(CfGeneration5, ExampleL5UniqueValues) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g5/example_L5.nc", cache);
    EXPECT_EQ(o.sources.count("uid"), 0u);  // string variables are not presented
    expect_values(read_all(*o.sources["quality"]), expected("g5_L5_quality"), "L5 quality");
    for (const char* v : {"fragment_unique_values", "fragment_map_uid", "fragment_quality"})
        EXPECT_TRUE(contains(o.parsed.hidden_variables, v)) << v;
}

TEST(CfGeneration5, ExampleL6ScalarWith360DayCalendar) {
    DatasetCache cache;
    auto o = open_cf(cases() + "/g5/example_L6.nc", cache);
    EXPECT_TRUE(o.sources["temperature"]->shape().empty());
    expect_values(read_all(*o.sources["temperature"]), expected("g5_L6"), "L6");
}

TEST(CfFixtures, RealNcaFilesParseMetadataOnly) {
    DatasetCache cache;
    auto rain = open_cf(fixtures() + "/cfa-0.6.2/rainmaker.nca", cache);
    ASSERT_EQ(rain.parsed.aggregates.size(), 1u);
    const auto& p = rain.parsed.aggregates[0];
    EXPECT_EQ(p.aggregate.shape, (std::vector<uint64_t>{20, 180, 360}));
    EXPECT_EQ(p.aggregate.fragments.size(), 10u);
    EXPECT_EQ(p.aggregate.fragments[9].path, "/home/users/dwest77/Documents/cfa_python_dw/testfiles/rain/example9.nc");
    EXPECT_NE(verify_error(*rain.sources["p"], 0).find("example0.nc"), std::string::npos);
    auto test = open_cf(fixtures() + "/cf-draft-2024-location-address-shape/testrain.nca", cache);
    ASSERT_EQ(test.parsed.aggregates.size(), 1u);
    EXPECT_EQ(test.parsed.aggregates[0].generation, CfGeneration::Draft2024);
    EXPECT_EQ(test.parsed.aggregates[0].aggregate.shape, (std::vector<uint64_t>{20, 180, 360}));
    EXPECT_NE(test.parsed.aggregates[0].aggregate.fragments[0].path.find("example8.nc"), std::string::npos);
    for (const char* v : {"fragment_location_0", "fragment_shape_0", "fragment_address_p"})
        EXPECT_TRUE(contains(test.parsed.hidden_variables, v)) << v;
    EXPECT_EQ(cache.opens(), 2u);  // the two aggregation files, no fragment
}

TEST(CfUnits, ReferenceTimesAndCalendars) {
    auto a = units_converter("days since 2002-01-01", "standard", "days since 2001-01-01", "standard");
    EXPECT_DOUBLE_EQ(a.scale, 1.0);
    EXPECT_DOUBLE_EQ(a.offset, 365.0);
    auto b = units_converter("days since 2002-01-01", "360_day", "days since 2001-01-01", "360_day");
    EXPECT_DOUBLE_EQ(b.offset, 360.0);
    auto c = units_converter("degC", "", "K", "");
    EXPECT_DOUBLE_EQ(c.offset, 273.15);
    EXPECT_THROW(units_converter("m s-1", "", "K", ""), std::runtime_error);
}

TEST(CfAlignment, GreedySize1Alignment) {
    EXPECT_EQ(align_fragment_axes({6, 73, 144}, {6, 1, 73, 144}), (std::vector<int>{0, 2, 3}));
    EXPECT_EQ(align_fragment_axes({}, {1, 1}), std::vector<int>{});
    EXPECT_EQ(align_fragment_axes({1, 5}, {1, 5}), (std::vector<int>{0, 1}));
    EXPECT_THROW(align_fragment_axes({12, 73, 144}, {6, 1, 73, 144}), std::runtime_error);
    EXPECT_THROW(align_fragment_axes({1, 6, 1}, {6, 1}), std::runtime_error);
}

TEST(CfNames, UriResolution) {
    PathPolicy paths("/data/agg/x.nc", {"/data"}, {});
    EXPECT_EQ(resolve_fragment_name("a%20b.nc", paths, true).path, "/data/agg/a b.nc");
    EXPECT_EQ(resolve_fragment_name("a%20b.nc", paths, false).path, "/data/agg/a%20b.nc");
    EXPECT_EQ(resolve_fragment_name("file:///data/y.nc", paths, true).path, "/data/y.nc");
    EXPECT_EQ(resolve_fragment_name("file://localhost/data/y.nc", paths, true).path, "/data/y.nc");
    EXPECT_EQ(resolve_fragment_name("/data/z.nc", paths, true).path, "/data/z.nc");
    EXPECT_NE(resolve_fragment_name("ftp://host/y.nc", paths, true).problem.find("\"ftp\""), std::string::npos);
    EXPECT_NE(resolve_fragment_name("../../etc/passwd", paths, true).problem, "");
}

TEST(CfNames, RemoteUrisStayUrlsUnconfined) {
    PathPolicy paths("/data/agg/x.nc", {"/data"},
                     {{"/data/agg/remote", "https://h.example/d"}, {"http://old.example/p", "/data/mirror"}});
    auto s3 = resolve_fragment_name("s3://bucket/dir/y%20z.nc#frag", paths, true);
    EXPECT_EQ(s3.problem, "");
    EXPECT_EQ(s3.path, "s3://bucket/dir/y z.nc");  // an S3 key is literal; remote/ encodes it
    EXPECT_EQ(resolve_fragment_name("http://h/y%20z.nc", paths, true).path, "http://h/y%20z.nc");  // sent as written
    EXPECT_EQ(resolve_fragment_name("HTTPS://h/y.nc", paths, true).path, "HTTPS://h/y.nc");
    // A local folder rewritten to a URL; a URL prefix rewritten to a local (confined) folder.
    EXPECT_EQ(resolve_fragment_name("remote/a/b.nc", paths, true).path, "https://h.example/d/a/b.nc");
    EXPECT_EQ(resolve_fragment_name("remote/a%20b.nc", paths, true).path, "https://h.example/d/a%20b.nc");
    PathPolicy to_s3("/data/agg/x.nc", {"/data"}, {{"/data/agg", "s3://bucket/p"}});
    EXPECT_EQ(resolve_fragment_name("a%20b.nc", to_s3, true).path, "s3://bucket/p/a b.nc");
    EXPECT_EQ(resolve_fragment_name("http://old.example/p/q.nc", paths, true).path, "/data/mirror/q.nc");
    EXPECT_EQ(resolve_fragment_name("http://old.example/pq.nc", paths, true).path, "http://old.example/pq.nc");
    PathPolicy outside("/data/agg/x.nc", {"/data/agg"}, {{"http://old.example/p", "/etc"}});
    EXPECT_NE(resolve_fragment_name("http://old.example/p/passwd", outside, true).problem, "");
    // NCA: a relative name under a remote base.
    EXPECT_EQ(paths.resolve("y.nc", true, "s3://bucket/base"), "s3://bucket/base/y.nc");
    EXPECT_EQ(paths.resolve("y.nc", true, "http://h/base/"), "http://h/base/y.nc");
    EXPECT_EQ(paths.resolve("/data/abs.nc", true, "http://h/base/"), "/data/abs.nc");
}
