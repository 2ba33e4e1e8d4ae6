// The .vds writer's metadata-only decisions: AggregatedSource::uniform_value
// answers from the partition grid without opening a file (the fragment
// paths here do not exist), and make_vds_view refuses datasets it cannot
// hold with a clear error. Values and bytes are checked end to end by
// vds_view_test.py (decoded by the independent vds_decode.py).
#include <gtest/gtest.h>

#include <cstring>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/aggregated_source.hpp"
#include "codecs/error.hpp"
#include "codecs/memory_source.hpp"
#include "codecs/vds/vds_view.hpp"

using namespace ncafs;

namespace {

std::vector<uint8_t> f32(float v) {
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &v, 4);
    return b;
}

agg::Fragment fragment(agg::FragmentKind kind, uint64_t row, uint64_t rows, float constant = 0) {
    agg::Fragment f;
    f.kind = kind;
    f.path = "/nonexistent/vds-writer-test/p" + std::to_string(row) + ".nc";
    f.variable = "v";
    f.start = {row, 0};
    f.count = {rows, 6};
    f.axis_to_master = {0, 1};
    if (kind == agg::FragmentKind::Constant) f.constant = f32(constant);
    return f;
}

// Rows 0-1 a file, 2 missing, 3 constant 5, 4 constant 5, 5 uncovered, 6 constant 7.
std::shared_ptr<const agg::AggregatedSource> make_source(agg::DatasetCache& cache) {
    auto a = std::make_shared<agg::Aggregate>();
    a->file = "/nonexistent/vds-writer-test/a.nca";
    a->name = "v";
    a->type = NcType::Float;
    a->shape = {7, 6};
    a->fill = f32(-999.0f);
    for (const auto& f : {fragment(agg::FragmentKind::File, 0, 2), fragment(agg::FragmentKind::Missing, 2, 1),
                          fragment(agg::FragmentKind::Constant, 3, 1, 5.0f),
                          fragment(agg::FragmentKind::Constant, 4, 1, 5.0f),
                          fragment(agg::FragmentKind::Constant, 6, 1, 7.0f)})
        a->fragments.push_back(f);
    auto policy = std::make_shared<const agg::PathPolicy>(a->file, std::vector<std::string>{},
                                                          std::vector<std::pair<std::string, std::string>>{});
    return std::make_shared<const agg::AggregatedSource>(a, policy, cache);
}

std::optional<std::vector<uint8_t>> uniform(const ArraySource& s, std::vector<uint64_t> start,
                                            std::vector<uint64_t> count) {
    return s.uniform_value(start, count);
}

// A variable too large to hold in memory: never read here.
class HugeSource final : public ArraySource {
public:
    explicit HugeSource(std::vector<uint64_t> shape) : shape_(std::move(shape)) {}
    NcType type() const override { return NcType::Float; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t>, std::span<const uint64_t>, ByteOrder, void*) const override {
        throw SourceError("huge", "not readable in this test");
    }

private:
    std::vector<uint64_t> shape_;
};

}  // namespace

TEST(VdsWriter, UniformValueFromThePartitionGrid) {
    agg::DatasetCache cache;
    auto s = make_source(cache);
    EXPECT_FALSE(uniform(*s, {0, 0}, {2, 6}));            // a file fragment: unknown without reading
    EXPECT_EQ(uniform(*s, {2, 1}, {1, 3}), f32(-999.0f));  // missing: the master fill
    EXPECT_EQ(uniform(*s, {3, 0}, {2, 6}), f32(5.0f));     // two constant fragments of one value
    EXPECT_EQ(uniform(*s, {5, 0}, {1, 6}), f32(-999.0f));  // uncovered cells: the fill
    EXPECT_FALSE(uniform(*s, {2, 0}, {2, 6}));            // missing + constant 5
    EXPECT_FALSE(uniform(*s, {4, 0}, {3, 6}));            // constant 5 + fill + constant 7
    EXPECT_FALSE(uniform(*s, {1, 0}, {2, 6}));            // file + missing
    EXPECT_THROW(uniform(*s, {6, 0}, {2, 6}), UsageError);  // outside the shape
}

TEST(VdsWriter, RefusesDatasetsItCannotHold) {
    auto ds = std::make_shared<Dataset>();
    ds->origin = "/x/one_d.nc";
    ds->dimensions = {{"t", 4, false}};
    ds->variables.push_back(Variable{"v", NcType::Float, {0}, {},
                                     std::make_shared<MemorySource>(NcType::Float, std::vector<uint64_t>{4},
                                                                    std::vector<uint8_t>(16), "v")});
    EXPECT_GT(make_vds_view(ds)->size(), 0u);  // 1-D: held with a unit axis
    EXPECT_EQ(vds_view_refusal(*ds, 2), std::nullopt);
    ds->origin = "/x/int64_only.nc";
    ds->variables = {Variable{"v", NcType::Int64, {0}, {},
                              std::make_shared<MemorySource>(NcType::Int64, std::vector<uint64_t>{4},
                                                             std::vector<uint8_t>(32), "v")}};
    try {
        make_vds_view(ds);
        FAIL() << "an int64-only dataset made a .vds view";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("/x/int64_only.nc"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("rank 1 to 6"), std::string::npos) << e.what();
    }
    EXPECT_NE(vds_view_refusal(*ds, 2).value_or("").find("rank 1 to 6"), std::string::npos);
    // 2049 x 2049 tiles of 256 at LOD0 alone: more than 2^20 chunks.
    ds->origin = "/x/huge.nc";
    ds->dimensions = {{"y", 2049 * 256, false}, {"x", 2049 * 256, false}};
    ds->variables = {Variable{"v", NcType::Float, {0, 1}, {},
                              std::make_shared<HugeSource>(std::vector<uint64_t>{2049 * 256, 2049 * 256})}};
    EXPECT_THROW(make_vds_view(ds), UsageError);
    EXPECT_NE(vds_view_refusal(*ds, 2).value_or("").find("more than 1048576 chunks"), std::string::npos);
    EXPECT_NE(vds_view_refusal(*ds, 0).value_or("").find("more than 1048576 chunks"), std::string::npos);
}
