// The spec's examples 3 and 4 (nca.rst 0.2.2) with generated partition files,
// and the real CFA-0.4 file delme.nca (fragments absent).
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/model/error.hpp"
#include "cli/commands.hpp"
#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

const std::string& examples_dir() {
    static std::string d = [] {
        std::string dir = test::fresh_dir("examples");
        test::run_generator(dir, "--examples");
        return dir;
    }();
    return d;
}

AggregationOptions david_options() {
    AggregationOptions o;
    o.allowed_roots = {examples_dir()};
    o.path_rewrites = {{"/home/david", examples_dir() + "/home/david"}};
    return o;
}

std::vector<float> read_all(const Variable& v) {
    std::vector<float> out(v.source->element_count());
    v.source->read_linear(0, out.size(), ByteOrder::Native, out.data());
    return out;
}

std::vector<float> nc_floats(const std::string& path, const std::string& var, std::vector<size_t> count) {
    auto raw = test::nc_read(path, var, std::vector<size_t>(count.size(), 0), count);
    std::vector<float> out(raw.size() / 4);
    std::memcpy(out.data(), raw.data(), raw.size());
    return out;
}

}  // namespace

TEST(AggregationExamples, Example3TwoExternalPartitionsHalfOpen) {
    auto ds = open_aggregation(examples_dir() + "/temperature.nca", david_options(), agg::DatasetCache::shared());
    const Variable* tas = ds->find_variable("tas");
    ASSERT_NE(tas, nullptr);
    EXPECT_EQ(ds->shape(*tas), (std::vector<uint64_t>{48, 64, 128}));
    EXPECT_EQ(tas->find_attribute("nca_array"), nullptr);
    EXPECT_EQ(tas->find_attribute("cf_role"), nullptr);
    EXPECT_EQ(ds->find_attribute("Conventions")->as_text(), "CF-1.5");
    auto got = read_all(*tas);
    auto t1 = nc_floats(examples_dir() + "/home/david/test1.nc", "tas", {12, 64, 128});
    auto t2 = nc_floats(examples_dir() + "/home/david/test2.nc", "tas2", {36, 64, 128});
    ASSERT_EQ(got.size(), t1.size() + t2.size());
    EXPECT_TRUE(std::equal(t1.begin(), t1.end(), got.begin()));
    EXPECT_TRUE(std::equal(t2.begin(), t2.end(), got.begin() + static_cast<long>(t1.size())));
}

TEST(AggregationExamples, Example3WithoutRewriteIsRefusedAsOutsideTheRoots) {
    AggregationOptions o;
    o.allowed_roots = {examples_dir()};
    try {
        open_aggregation(examples_dir() + "/temperature.nca", o, agg::DatasetCache::shared());
        FAIL() << "expected an error";
    } catch (const agg::AggregationError& e) {
        EXPECT_NE(std::string(e.what()).find("tas:nca_array Partitions[0].data.file"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("outside the allowed roots"), std::string::npos) << e.what();
    }
}

TEST(AggregationExamples, Example4PrivatePartitionValueRule) {
    auto ds = open_aggregation(examples_dir() + "/temperature2.nca", david_options(), agg::DatasetCache::shared());
    const Variable* tas = ds->find_variable("tas");
    ASSERT_NE(tas, nullptr);
    EXPECT_EQ(ds->find_variable("nca_45sdf83745"), nullptr);
    EXPECT_FALSE(ds->find_dimension("nca12"));
    EXPECT_FALSE(ds->find_dimension("nca128"));
    auto got = read_all(*tas);
    // tas[t,y,x] = nca_45sdf83745[x, 11-t, y] + 273.15 for t < 12 (computed here from netcdf-c reads).
    auto priv = nc_floats(examples_dir() + "/temperature2.nca", "nca_45sdf83745", {128, 12, 64});
    auto t2 = nc_floats(examples_dir() + "/home/david/test2.nc", "tas2", {36, 64, 128});
    size_t bad = 0;
    for (size_t t = 0; t < 48; ++t)
        for (size_t y = 0; y < 64; ++y)
            for (size_t x = 0; x < 128; ++x) {
                float want = t < 12 ? static_cast<float>(static_cast<double>(priv[(x * 12 + (11 - t)) * 64 + y]) + 273.15)
                                    : t2[((t - 12) * 64 + y) * 128 + x];
                if (got[(t * 64 + y) * 128 + x] != want && ++bad < 5)
                    ADD_FAILURE() << "tas[" << t << "," << y << "," << x << "] = " << got[(t * 64 + y) * 128 + x] << " want " << want;
            }
    EXPECT_EQ(bad, 0u);
}

TEST(AggregationExamples, Example4VerbatimIsReportedWithItsPosition) {
    try {
        open_aggregation(examples_dir() + "/temperature2_verbatim.nca", david_options(), agg::DatasetCache::shared());
        FAIL() << "the verbatim example has unbalanced quotes and must be reported";
    } catch (const agg::AggregationError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("temperature2_verbatim.nca"), std::string::npos) << m;
        EXPECT_NE(m.find("tas:nca_array"), std::string::npos) << m;
        EXPECT_NE(m.find("at character 1:"), std::string::npos) << m;  // the 'd' of {directions'
    }
}

TEST(AggregationExamples, DelmeParsesMetadataOnlyAndCheckReportsMissingFragments) {
    const std::string path = test::source_dir() + "/tests/data/aggregation-examples/cfa-0.4-json/delme.nca";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_TRUE(is_aggregation_file(path));
    auto ds = open_aggregation(path, AggregationOptions{}, agg::DatasetCache::shared());
    const Variable* lat = ds->find_variable("latitude");
    ASSERT_NE(lat, nullptr);
    EXPECT_EQ(ds->shape(*lat), (std::vector<uint64_t>{10, 9}));  // inclusive [[0, 9], [0, 8]]
    const Variable* u = ds->find_variable("eastward_wind_3");
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(ds->shape(*u), (std::vector<uint64_t>{1, 9, 10}));
    EXPECT_NE(u->find_attribute("ancillary_variables"), nullptr);
    EXPECT_EQ(u->find_attribute("cfa_array"), nullptr);
    EXPECT_EQ(ds->find_attribute("Conventions")->as_text(), "CF-1.7");
    EXPECT_NE(ds->find_variable("greek_letters"), nullptr);
    // Reading needs delme.nc, which was never committed: an error, never fill.
    std::vector<int32_t> buf(90);
    EXPECT_THROW(lat->source->read_linear(0, 90, ByteOrder::Native, buf.data()), SourceError);

    std::ostringstream out, err;
    EXPECT_EQ(ncafs::cli::run_inspect({path}, out, err), 0) << err.str();
    EXPECT_NE(out.str().find("latitude(grid_latitude, grid_longitude) int shape [10, 9]"), std::string::npos) << out.str();
    std::ostringstream cout_, cerr_;
    EXPECT_EQ(ncafs::cli::run_check({path}, cout_, cerr_), 1);
    std::istringstream lines(cout_.str());
    size_t missing = 0;
    for (std::string line; std::getline(lines, line);)
        if (line.find("delme.nc") != std::string::npos && line.find("does not exist") != std::string::npos) ++missing;
    EXPECT_EQ(missing, 9u) << cout_.str();  // nine cfa_variables
}

TEST(AggregationExamples, InspectAndCheckOnExample4) {
    std::ostringstream out, err;
    std::vector<std::string> args = {"--root", examples_dir(), "--rewrite", "/home/david=" + examples_dir() + "/home/david",
                                     examples_dir() + "/temperature2.nca"};
    EXPECT_EQ(ncafs::cli::run_inspect(args, out, err), 0) << err.str();
    EXPECT_NE(out.str().find("tas(time, lat, lon) float shape [48, 64, 128] units \"K\""), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("reverse(time) axes(lon, time, lat) units(K @ 273.15 -> K)"), std::string::npos) << out.str();
    std::ostringstream cout_, cerr_;
    EXPECT_EQ(ncafs::cli::run_check(args, cout_, cerr_), 0) << cout_.str() << cerr_.str();
    EXPECT_EQ(ncafs::cli::run_check({"--bogus"}, cout_, cerr_), 2);
}

TEST(AggregationExamples, ByteCopyFragmentPassesFileExtentsThrough) {
    auto ds = open_aggregation(examples_dir() + "/temperature2.nca", david_options(), agg::DatasetCache::shared());
    const Variable* tas = ds->find_variable("tas");
    const uint64_t row = 64 * 128;
    // Time steps 12.. come from test2.nc (CDF-1, float, identity): a run inside it splices.
    auto ext = tas->source->big_endian_extents(13 * row + 5, 2 * row);
    ASSERT_TRUE(ext.has_value());
    std::vector<uint8_t> from_file;
    for (const auto& e : *ext) {
        std::vector<uint8_t> b(e.length);
        e.file->pread_exact(b.data(), b.size(), e.offset);
        from_file.insert(from_file.end(), b.begin(), b.end());
    }
    std::vector<uint8_t> big(2 * row * 4);
    tas->source->read_linear(13 * row + 5, 2 * row, ByteOrder::Big, big.data());
    EXPECT_EQ(from_file, big);
    // Time steps 0..11 need units, reversal and permutation: no extents.
    EXPECT_FALSE(tas->source->big_endian_extents(0, 10).has_value());
    // A run crossing the partition boundary: no extents.
    EXPECT_FALSE(tas->source->big_endian_extents(12 * row - 1, 2).has_value());
}
