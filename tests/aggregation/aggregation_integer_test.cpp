// Exact integer conformance: every pair of the eight integer types, fills at
// the ends of the range and fills that differ only beyond double precision
// (generate_integer_pairs.py computes the expected master array with numpy
// and Python integers); read through open_aggregation and compared byte for
// byte with netcdf-c's read of that oracle file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "codecs/array_source.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

std::string element_text(NcType t, const uint8_t* p) {
    if (t == NcType::Int64) {
        int64_t v;
        std::memcpy(&v, p, 8);
        return std::to_string(v);
    }
    if (t == NcType::UInt64) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return std::to_string(v);
    }
    return std::to_string(static_cast<int64_t>(element_as_double(t, p, 0)));
}

}  // namespace

TEST(AggregationIntegers, EveryIntegerPairMatchesNumpyExactly) {
    const std::string dir = test::fresh_dir("integers");
    const std::string cmd = "/usr/bin/python3 " + test::source_dir() + "/tests/aggregation/generate_integer_pairs.py " + dir;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(dir + "/manifest.json");
    const auto manifest = nlohmann::json::parse(in);
    std::set<std::pair<std::string, std::string>> pairs;
    size_t beyond_double = 0;
    for (const auto& c : manifest) {
        const std::string nca = c["nca"], oracle = c["oracle"];
        SCOPED_TRACE(nca);
        pairs.insert({c["ptype"].get<std::string>(), c["mtype"].get<std::string>()});
        if (c["variant"] == "fill_beyond_double") ++beyond_double;
        std::shared_ptr<const Dataset> ds;
        ASSERT_NO_THROW(ds = open_aggregation(nca, AggregationOptions{}, agg::DatasetCache::shared()));
        const Variable* v = ds->find_variable("v");
        ASSERT_NE(v, nullptr);
        const auto shape = test::nc_shape(oracle, "v");
        NcType t;
        const auto want = test::nc_read(oracle, "v", {0}, shape, &t);
        ASSERT_EQ(t, v->type);
        std::vector<uint8_t> got(want.size());
        v->source->read_linear(0, shape[0], ByteOrder::Native, got.data());
        const size_t es = type_size(t);
        for (size_t i = 0; i < shape[0]; ++i)
            EXPECT_EQ(element_text(t, got.data() + i * es), element_text(t, want.data() + i * es)) << "element " << i;
    }
    EXPECT_EQ(pairs.size(), 64u) << "every (partition, master) pair of the eight integer types";
    EXPECT_GE(beyond_double, 2u);
}
