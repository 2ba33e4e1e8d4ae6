// `ncafs aggregate` round trips: partition files from make_partitions.py
// (netCDF4-python), aggregated by run_aggregate, read back through the CF
// reader (make_cf_source) and compared with NCO ncrcat's concatenation of
// the same files, read with netcdf-c - or with netCDF4-python's own unpacking
// where ncrcat cannot be right (per-file packing).
#include <gtest/gtest.h>
#include <netcdf.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli/commands.hpp"
#include "aggregation/terms/cf_fragment_source.hpp"
#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/check/cf_validation.hpp"
#include "aggregation/model/calendar.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "tests/aggregation_cf/cf_test_util.hpp"

namespace fs = std::filesystem;
using namespace ncafs;
using namespace ncafs::agg;
using namespace ncafs::cftest;

namespace {

std::string make_dir(const std::string& kind) {
    fs::path dir = fs::path(NCAFS_CF_WORK_DIR) / ("roundtrip_" + kind + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string cmd = std::string("/usr/bin/python3 ") + NCAFS_CF_PARTITIONS + " " + dir.string() + " " + kind;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return dir.string();
}

struct Read {
    std::shared_ptr<const Dataset> file;
    std::map<std::string, std::shared_ptr<const AggregatedSource>> sources;
    CfAggregations parsed;
};

Read read_back(const std::string& path, DatasetCache& cache) {
    Read r;
    auto paths = std::make_shared<const PathPolicy>(path, std::vector<std::string>{}, std::vector<std::pair<std::string, std::string>>{});
    r.file = cache.get(path);
    r.parsed = parse_cf_file(path, *r.file, *paths);
    for (const auto& a : r.parsed.aggregates)
        r.sources[a.aggregate.name] = make_cf_source(a, paths, cache);
    return r;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, const std::string& what, double rel = 1e-12) {
    ASSERT_EQ(got.size(), want.size()) << what;
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= rel * std::max(1.0, std::fabs(want[i]))))
            if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " want " << want[i];
    EXPECT_EQ(bad, 0u) << what;
}

int aggregate(std::vector<std::string> args, std::string* err_text = nullptr) {
    std::ostringstream out, err;
    int rc = ncafs::cli::run_aggregate(args, out, err);
    if (err_text) *err_text = err.str();
    return rc;
}

}  // namespace

class TimeSplit : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(TimeSplit, EqualsNcrcat) {
    const std::string dir = make_dir("time");
    std::vector<std::string> parts;
    for (int i = 0; i < 5; ++i) parts.push_back(dir + "/part_" + std::to_string(i) + ".nc");
    // ncrcat wants the files in time order, and one time unit: convert part_3 first with ncap2? No:
    // ncrcat rebases time units itself ("days since" vs "hours since") as NCO documents.
    std::string cmd = "ncrcat -O -h";
    for (const auto& p : parts) cmd += " " + p;
    cmd += " " + dir + "/ncrcat.nc";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

    std::vector<std::string> args = GetParam();
    args.push_back("-o");
    args.push_back(dir + "/agg.nc");
    // Arguments shuffled: the writer orders fragments by time values.
    for (int i : {3, 0, 4, 1, 2}) args.push_back(parts[static_cast<size_t>(i)]);
    std::string err;
    ASSERT_EQ(aggregate(args, &err), 0) << err;
    EXPECT_NE(err.find("history"), std::string::npos) << "global attribute differences are reported";

    DatasetCache cache;
    auto r = read_back(dir + "/agg.nc", cache);
    for (const char* v : {"tas", "time", "time_bnds"}) {
        ASSERT_TRUE(r.sources.count(v)) << v;
        expect_near(read_all(*r.sources[v]), nc_values(dir + "/ncrcat.nc", v), v, 1e-9);
    }
    EXPECT_EQ(r.sources["tas"]->shape(), (std::vector<uint64_t>{15, 4, 6}));
    for (const char* v : {"lat", "lon", "crs"}) {
        const Variable* non_aggregated = r.file->find_variable(v);
        ASSERT_TRUE(non_aggregated && non_aggregated->source) << v;
        expect_near(read_all(*non_aggregated->source), nc_values(dir + "/ncrcat.nc", v), v);
    }
    auto check = check_cf_aggregation(dir + "/agg.nc", {}, cache, true);
    EXPECT_TRUE(check.problems.empty()) << (check.problems.empty() ? "" : check.problems.front());
}

INSTANTIATE_TEST_SUITE_P(Formats, TimeSplit,
                         ::testing::Values(std::vector<std::string>{}, std::vector<std::string>{"--classic"},
                                           std::vector<std::string>{"--absolute", "--dim", "time"}));

TEST(AggregateCommand, PerFilePackingIsReportedAndUnpacked) {
    const std::string dir = make_dir("packed");
    std::string err;
    ASSERT_EQ(aggregate({"-o", dir + "/agg.nc", dir + "/part_2.nc", dir + "/part_0.nc", dir + "/part_1.nc"}, &err), 0) << err;
    EXPECT_NE(err.find("tas:scale_factor differs"), std::string::npos) << err;
    EXPECT_NE(err.find("tas:add_offset differs"), std::string::npos) << err;
    DatasetCache cache;
    auto r = read_back(dir + "/agg.nc", cache);
    EXPECT_EQ(r.sources["tas"]->type(), NcType::Float);
    expect_near(read_all(*r.sources["tas"]), nc_values(dir + "/expected.nc", "tas"), "unpacked tas", 1e-6);
}

TEST(AggregateCommand, TilesAlongTwoDimensions) {
    const std::string dir = make_dir("tiles");
    std::string err;
    ASSERT_EQ(aggregate({"--dim", "time", "--dim", "lat", "-o", dir + "/agg.nc", dir + "/tile_1_1.nc", dir + "/tile_0_0.nc",
                         dir + "/tile_1_0.nc", dir + "/tile_0_1.nc"}, &err), 0) << err;
    DatasetCache cache;
    auto r = read_back(dir + "/agg.nc", cache);
    ASSERT_EQ(r.sources["tas"]->shape(), (std::vector<uint64_t>{6, 4, 6}));
    auto got = read_all(*r.sources["tas"]);
    for (int ti = 0; ti < 2; ++ti)
        for (int li = 0; li < 2; ++li) {
            auto tile = nc_values(dir + "/tile_" + std::to_string(ti) + "_" + std::to_string(li) + ".nc", "tas");
            for (size_t t = 0; t < 3; ++t)
                for (size_t y = 0; y < 2; ++y)
                    for (size_t x = 0; x < 6; ++x)
                        EXPECT_EQ(got[((ti * 3 + t) * 4 + li * 2 + y) * 6 + x], tile[(t * 2 + y) * 6 + x]);
        }
    expect_near(read_all(*r.sources["lat"]), {60, 20, -20, -60}, "lat (decreasing)");
}

TEST(AggregateCommand, DisagreementIsRefusedNamingFileAndAttribute) {
    const std::string dir = make_dir("mismatch");
    std::string err;
    EXPECT_EQ(aggregate({"-o", dir + "/agg.nc", dir + "/part_0.nc", dir + "/part_1.nc"}, &err), 1);
    EXPECT_NE(err.find("part_1.nc: attribute lat:units"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir + "/agg.nc"));
    EXPECT_EQ(aggregate({"-o", dir + "/agg.nc"}, &err), 2);
}

// A file with no records along the aggregated dimension (a growing archive's
// newest file) is refused, naming the file (it has no coordinate to place it by).
TEST(AggregateCommand, FileWithoutRecordsIsRefusedNamingIt) {
    const std::string dir = make_dir("no_records");
    std::string err;
    EXPECT_EQ(aggregate({"--dim", "time", "-o", dir + "/agg.nc", dir + "/part_0.nc", dir + "/part_1.nc",
                         dir + "/part_2.nc"}, &err), 1);
    EXPECT_NE(err.find("part_2.nc: dimension time has length 0"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir + "/agg.nc"));
}

// CF-1.13 4.4.3 names one calendar several ways: the aliases aggregate, and
// the output carries the canonical name (read back by netcdf-c); two
// different calendars are still refused.
std::string calendar_of_time(const std::string& path) {
    int nc = -1, var = -1;
    size_t len = 0;
    if (nc_open(path.c_str(), NC_NOWRITE, &nc) != NC_NOERR) return "(cannot open)";
    std::string value = "(none)";
    if (nc_inq_varid(nc, "time", &var) == NC_NOERR && nc_inq_attlen(nc, var, "calendar", &len) == NC_NOERR) {
        value.assign(len, '\0');
        nc_get_att_text(nc, var, "calendar", value.data());
    }
    nc_close(nc);
    return value;
}

TEST(AggregateCommand, CalendarAliasesAggregateUnderTheCanonicalName) {
    for (const auto& [kind, canonical] : std::vector<std::pair<std::string, std::string>>{
             {"calendars", "standard"}, {"calendars_noleap", "noleap"}}) {
        const std::string dir = make_dir(kind);
        std::vector<std::string> args = {"--dim", "time", "-o", dir + "/agg.nc"};
        for (int i = 0; i < 4; ++i) args.push_back(dir + "/part_" + std::to_string(i) + ".nc");
        std::string err;
        ASSERT_EQ(aggregate(args, &err), 0) << kind << ": " << err;
        EXPECT_EQ(calendar_of_time(dir + "/agg.nc"), canonical) << kind;
        DatasetCache cache;
        Read r = read_back(dir + "/agg.nc", cache);
        ASSERT_TRUE(r.sources.count("time")) << kind;
        expect_near(read_all(*r.sources["time"]), {0, 1, 2, 3, 4, 5, 6, 7}, kind + " time");
    }
}

TEST(AggregateCommand, DifferentCalendarsAreRefused) {
    const std::string dir = make_dir("calendars_mixed");
    std::string err;
    std::vector<std::string> args = {"--dim", "time", "-o", dir + "/agg.nc"};
    for (int i = 0; i < 4; ++i) args.push_back(dir + "/part_" + std::to_string(i) + ".nc");
    EXPECT_EQ(aggregate(args, &err), 1);
    EXPECT_NE(err.find("part_1.nc: attribute time:calendar"), std::string::npos) << err;
}

TEST(Calendar, AliasesNameOneCalendar) {
    EXPECT_EQ(canonical_calendar(""), "standard");
    EXPECT_EQ(canonical_calendar(" Gregorian "), "standard");
    EXPECT_EQ(canonical_calendar("365_day"), "noleap");
    EXPECT_EQ(canonical_calendar("366_DAY"), "all_leap");
    EXPECT_EQ(canonical_calendar("360_day"), "360_day");
    EXPECT_TRUE(same_calendar("all_leap", "366_day"));
    EXPECT_FALSE(same_calendar("noleap", "standard"));
    // Reference times in aliased calendars convert; in different ones they do not.
    Affine a = units_converter("days since 2000-01-02", "365_day", "days since 2000-01-01", "noleap");
    EXPECT_DOUBLE_EQ(a.offset, 1.0);
    EXPECT_THROW(units_converter("days since 2000-01-02", "360_day", "days since 2000-01-01", "noleap"),
                 std::runtime_error);
}
