// AggregatedSource::fragment_source (aggregation/read), which the kerchunk
// export asks once per chunk reference: the same variable source as
// opened_fragment gives, whether the partition was resolved before (the
// path that builds no Fragment) or not; a fragment without a file is
// refused. And kerchunk::append_json_string: the serializer's own text for
// every kind of string a key or path may hold.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aggregation/kerchunk_export/zarr_metadata.hpp"
#include "aggregation/read/aggregated_source.hpp"
#include "codecs/error.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

// A CDF-5 file holding float v(x) = values, written by netcdf-c.
void write_partition(const std::string& path, const std::vector<double>& values) {
    test::nc_write(path, {{"x", values.size()}}, {test::NcVarSpec{"v", NC_FLOAT, {"x"}, {}, values}});
}

// v over two partitions of two values each, then a Missing one.
std::shared_ptr<const agg::AggregatedSource> source_over(const std::string& dir, agg::DatasetCache& cache) {
    auto aggregate = std::make_shared<agg::Aggregate>();
    aggregate->file = dir + "/a.nca";
    aggregate->name = "v";
    aggregate->type = NcType::Float;
    aggregate->dims = {"x"};
    aggregate->shape = {6};
    aggregate->fill.resize(4);
    for (uint64_t i = 0; i < 3; ++i) {
        agg::Fragment f;
        f.kind = i < 2 ? agg::FragmentKind::File : agg::FragmentKind::Missing;
        f.start = {2 * i};
        f.count = {2};
        f.path = dir + "/p" + std::to_string(i) + ".nc";
        f.variable = "v";
        f.axis_to_master = {0};
        aggregate->fragments.push_back(f);
    }
    auto policy = std::make_shared<const agg::PathPolicy>(aggregate->file, std::vector<std::string>{},
                                                          std::vector<std::pair<std::string, std::string>>{});
    return std::make_shared<const agg::AggregatedSource>(aggregate, policy, cache);
}

std::vector<float> values_of(const ArraySource& s) {
    std::vector<float> out(s.element_count());
    s.read_linear(0, out.size(), ByteOrder::Native, out.data());
    return out;
}

}  // namespace

TEST(FragmentSource, TheSourceOpenedFragmentGivesResolvedBeforeOrNot) {
    const std::string dir = test::fresh_dir("fragment_source");
    write_partition(dir + "/p0.nc", {1, 2});
    write_partition(dir + "/p1.nc", {3, 4});
    agg::DatasetCache cache;
    auto source = source_over(dir, cache);
    // Partition 1 asked first: nothing resolved yet.
    auto cold = source->fragment_source(1);
    ASSERT_TRUE(cold);
    EXPECT_EQ(values_of(*cold), (std::vector<float>{3, 4}));
    for (size_t i : {0, 1}) {
        auto opened = source->opened_fragment(i);
        ASSERT_TRUE(opened.variable);
        auto warm = source->fragment_source(i);  // resolved by opened_fragment just before
        EXPECT_EQ(warm.get(), opened.variable->source.get()) << "partition " << i;
        EXPECT_EQ(values_of(*warm), i == 0 ? (std::vector<float>{1, 2}) : (std::vector<float>{3, 4}));
    }
    EXPECT_EQ(cold.get(), source->fragment_source(1).get());
    EXPECT_THROW(source->fragment_source(2), SourceError);  // a Missing fragment has no variable
}

TEST(KerchunkJsonString, TheSerializersTextForEveryKindOfString) {
    const std::vector<std::string> strings = {
        "", "v3/599999", "/data/a b/p.nc", "quote\"in", "back\\slash", "tab\tnew\nline", std::string("nul\0x", 5),
        "\x1f\x7f~ ", "caf\xc3\xa9", "bad \xc3 utf-8", "bad end \xe2\x82", "\xff\xfe"};
    for (const auto& s : strings) {
        std::string out = "prefix";
        agg::kerchunk::append_json_string(out, s);
        EXPECT_EQ(out, "prefix" + agg::kerchunk::json_text(s)) << s;
    }
}
