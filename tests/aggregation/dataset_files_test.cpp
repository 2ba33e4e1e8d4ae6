// agg::files_drawn_on and agg::draws_on_remote_objects
// (aggregation/read/dataset_files): the files a dataset draws on, its origin
// first and each partition once, and whether it fetches any object by URL.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/read/dataset_files.hpp"

using namespace ncafs;

namespace {

// A dataset of one aggregated variable over `paths` (one File partition of two
// values each), then a Missing partition naming `missing_path`, and a non-aggregated variable.
Dataset dataset_over(const std::vector<std::string>& paths, const std::string& missing_path,
                     agg::DatasetCache& cache) {
    auto aggregate = std::make_shared<agg::Aggregate>();
    aggregate->file = "/data/a.nca";
    aggregate->name = "tas";
    aggregate->type = NcType::Float;
    aggregate->dims = {"t"};
    aggregate->shape = {2 * paths.size() + 2};
    aggregate->fill.resize(4);
    for (uint64_t i = 0; i < paths.size(); ++i) {
        agg::Fragment f;
        f.start = {2 * i};
        f.count = {2};
        f.path = paths[i];
        f.variable = "tas";
        f.axis_to_master = {0};
        aggregate->fragments.push_back(f);
    }
    agg::Fragment missing;
    missing.kind = agg::FragmentKind::Missing;
    missing.path = missing_path;
    missing.start = {2 * paths.size()};
    missing.count = {2};
    aggregate->fragments.push_back(missing);  // names no file it draws on
    auto policy = std::make_shared<const agg::PathPolicy>("/data/a.nca", std::vector<std::string>{},
                                                          std::vector<std::pair<std::string, std::string>>{});
    Dataset ds;
    ds.origin = "/data/a.nca";
    ds.variables.push_back(Variable{"tas", NcType::Float, {}, {},
                                    std::make_shared<const agg::AggregatedSource>(aggregate, policy, cache)});
    ds.variables.push_back(Variable{"non_aggregated", NcType::Float, {}, {}, nullptr});
    return ds;
}

}  // namespace

TEST(FilesDrawnOn, OriginThenEachPartitionOnce) {
    agg::DatasetCache cache;
    Dataset ds = dataset_over({"/data/p1.nc", "/data/p2.nc", "/data/p1.nc"}, "/data/never.nc", cache);
    EXPECT_EQ(agg::files_drawn_on(ds), (std::vector<std::string>{"/data/a.nca", "/data/p1.nc", "/data/p2.nc"}));
}

TEST(FilesDrawnOn, VariablesOverTheSameFilesListThemOnce) {
    agg::DatasetCache cache;
    Dataset ds = dataset_over({"/data/p1.nc", "/data/p2.nc"}, "/data/never.nc", cache);
    Dataset same = dataset_over({"/data/p1.nc", "/data/p2.nc"}, "/data/never.nc", cache);
    Dataset other = dataset_over({"/data/p3.nc", "/data/p2.nc"}, "/data/never.nc", cache);
    ds.variables.push_back(same.variables[0]);   // another variable, fragment by fragment the same files
    ds.variables.push_back(other.variables[0]);  // one more file
    EXPECT_EQ(agg::files_drawn_on(ds),
              (std::vector<std::string>{"/data/a.nca", "/data/p1.nc", "/data/p2.nc", "/data/p3.nc"}));
}

TEST(DrawsOnRemoteObjects, OnlyAFilePartitionAtAUrlCounts) {
    agg::DatasetCache cache;
    // A missing partition is never fetched, wherever its path points.
    EXPECT_FALSE(agg::draws_on_remote_objects(
        dataset_over({"/data/p1.nc", "/data/p2.nc"}, "https://example.org/never.nc", cache)));
    Dataset remote = dataset_over({"/data/p1.nc", "https://example.org/p2.nc"}, "/data/never.nc", cache);
    EXPECT_TRUE(agg::draws_on_remote_objects(remote));
    EXPECT_TRUE(agg::draws_on_remote_objects(*remote.variables[0].source));
    EXPECT_EQ(agg::files_drawn_on(remote), (std::vector<std::string>{"/data/a.nca", "/data/p1.nc"}));
}
