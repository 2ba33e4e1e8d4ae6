// StridedSource and make_lod_dataset against values computed here from the
// element index (an int32 array whose value is its own C-order index), and
// the elements the inner source is asked for (a counting wrapper): a LOD
// read never asks for the whole array.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>

#include "codecs/error.hpp"
#include "codecs/lod_dataset.hpp"
#include "codecs/memory_source.hpp"
#include "codecs/strided_source.hpp"

namespace {

using namespace ncafs;

// An int32 array whose elements are their C-order index; counts what it is asked for.
class IndexSource final : public ArraySource {
public:
    explicit IndexSource(std::vector<uint64_t> shape) : shape_(std::move(shape)) {}
    NcType type() const override { return NcType::Int; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override {
        check_box(shape_, start, count, "index source");
        ASSERT_EQ(order, ByteOrder::Native);
        elements_read += ncafs::element_count(count);
        ++reads;
        auto* dst = static_cast<int32_t*>(out);
        std::vector<uint64_t> at(start.begin(), start.end());
        const uint64_t n = ncafs::element_count(count);
        for (uint64_t i = 0; i < n; ++i) {
            uint64_t linear = 0;
            for (size_t d = 0; d < shape_.size(); ++d) linear = linear * shape_[d] + at[d];
            dst[i] = static_cast<int32_t>(linear);
            for (size_t d = shape_.size(); d-- > 0;) {  // next index of the box, C order
                if (++at[d] < start[d] + count[d]) break;
                at[d] = start[d];
            }
        }
    }
    mutable std::atomic<uint64_t> elements_read{0}, reads{0};

private:
    std::vector<uint64_t> shape_;
};

// Expected value of LOD element `lod_index` (C order over the LOD shape).
int32_t expected(const std::vector<uint64_t>& full, const std::vector<uint64_t>& strides,
                 const std::vector<uint64_t>& lod_shape, uint64_t lod_index) {
    std::vector<uint64_t> idx(full.size());
    for (size_t d = full.size(); d-- > 0;) {
        idx[d] = lod_index % lod_shape[d] * strides[d];
        lod_index /= lod_shape[d];
    }
    uint64_t linear = 0;
    for (size_t d = 0; d < full.size(); ++d) linear = linear * full[d] + idx[d];
    return static_cast<int32_t>(linear);
}

void check_whole(const std::vector<uint64_t>& full, const std::vector<uint64_t>& strides) {
    auto inner = std::make_shared<IndexSource>(full);
    StridedSource lod(inner, strides);
    for (size_t d = 0; d < full.size(); ++d) EXPECT_EQ(lod.shape()[d], (full[d] + strides[d] - 1) / strides[d]);
    std::vector<int32_t> got(lod.element_count());
    lod.read_linear(0, got.size(), ByteOrder::Native, got.data());
    for (uint64_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], expected(full, strides, lod.shape(), i)) << "element " << i;
    // Spans thin at most one stride's worth of skipped samples per kept one.
    const uint64_t widest = *std::max_element(strides.begin(), strides.end());
    EXPECT_LE(inner->elements_read.load(), lod.element_count() * widest) << "the LOD read asked for too much";
}

TEST(StridedSource, EveryStrideAndShape) {
    check_whole({5, 7, 9}, {1, 2, 2});      // record kept, odd lengths
    check_whole({4, 8, 8}, {1, 4, 4});
    check_whole({3, 10}, {2, 1});           // only the outer dimension decimated
    check_whole({2, 6, 3000}, {1, 2, 2});   // long rows: spans in pieces
    check_whole({2, 9, 40, 40}, {1, 4, 1, 1});  // big blocks after the decimated dimension: one read per index
    check_whole({1, 1}, {2, 2});
    check_whole({3, 5, 6, 7}, {2, 1, 2, 1});  // whole outer dimension between decimated ones
    check_whole({4, 3, 5}, {1, 2, 1});
}

TEST(StridedSource, EveryBoxOfASmallArray) {
    const std::vector<uint64_t> full = {5, 6, 11}, strides = {1, 2, 3};
    StridedSource lod(std::make_shared<IndexSource>(full), strides);  // shape 5 x 3 x 4
    const auto& shape = lod.shape();
    for (uint64_t s0 = 0; s0 < shape[0]; ++s0)
        for (uint64_t s1 = 0; s1 < shape[1]; ++s1)
            for (uint64_t s2 = 0; s2 < shape[2]; ++s2) {
                const uint64_t start[] = {s0, s1, s2}, count[] = {shape[0] - s0, shape[1] - s1, shape[2] - s2};
                std::vector<int32_t> got(count[0] * count[1] * count[2]);
                lod.read(start, count, ByteOrder::Native, got.data());
                uint64_t i = 0;
                for (uint64_t a = s0; a < shape[0]; ++a)
                    for (uint64_t b = s1; b < shape[1]; ++b)
                        for (uint64_t c = s2; c < shape[2]; ++c, ++i)
                            ASSERT_EQ(got[i], expected(full, strides, shape, (a * shape[1] + b) * shape[2] + c))
                                << "box from " << s0 << "," << s1 << "," << s2 << " element " << i;
            }
}

TEST(StridedSource, ReadsOnlyTheRowsItNeeds) {
    auto inner = std::make_shared<IndexSource>(std::vector<uint64_t>{4, 64, 64});
    StridedSource lod(inner, {1, 4, 4});
    std::vector<int32_t> out(lod.element_count());
    lod.read_linear(0, out.size(), ByteOrder::Native, out.data());
    // Rows 0, 4, 8... of each time step, each read as one span of 61 samples.
    EXPECT_EQ(inner->elements_read.load(), 4u * 16u * 61u);

    // Blocks of 6400 bytes after the decimated dimension: exactly the kept ones.
    auto big = std::make_shared<IndexSource>(std::vector<uint64_t>{2, 9, 40, 40});
    StridedSource rows(big, {1, 4, 1, 1});
    std::vector<int32_t> kept(rows.element_count());
    rows.read_linear(0, kept.size(), ByteOrder::Native, kept.data());
    EXPECT_EQ(big->elements_read.load(), 2u * 3u * 1600u);
}

TEST(StridedSource, BoxesInsideTheShape) {
    auto inner = std::make_shared<IndexSource>(std::vector<uint64_t>{6, 11});
    StridedSource lod(inner, {2, 3});  // shape 3 x 4
    const uint64_t start[] = {1, 1}, count[] = {2, 3};
    std::vector<int32_t> got(6);
    lod.read(start, count, ByteOrder::Native, got.data());
    const std::vector<int32_t> want = {2 * 11 + 3, 2 * 11 + 6, 2 * 11 + 9, 4 * 11 + 3, 4 * 11 + 6, 4 * 11 + 9};
    EXPECT_EQ(got, want);
    const uint64_t outside[] = {3, 0}, one[] = {1, 1};
    EXPECT_THROW(lod.read(outside, one, ByteOrder::Native, got.data()), UsageError);
    EXPECT_THROW(StridedSource(inner, {0, 1}), UsageError);
    EXPECT_THROW(StridedSource(inner, {2}), UsageError);
}

Dataset sample_dataset() {
    Dataset d;
    d.dimensions = {{"time", 3, true}, {"y", 5, false}, {"x", 8, false}, {"nv", 2, false}, {"strlen", 6, false}};
    auto var = [&](std::string name, NcType t, std::vector<size_t> dims) {
        Variable v{std::move(name), t, std::move(dims), {}, nullptr};
        std::vector<uint64_t> shape;
        for (size_t id : v.dimids) shape.push_back(d.dimensions[id].length);
        v.source = std::make_shared<IndexSource>(shape);
        return v;
    };
    d.variables.push_back(var("tas", NcType::Int, {0, 1, 2}));
    d.variables.push_back(var("x", NcType::Int, {2}));
    d.variables.push_back(var("x_bnds", NcType::Int, {2, 3}));
    d.variables.back().attributes.clear();
    d.variables[1].attributes.push_back(Attribute::text("bounds", "x_bnds"));
    Variable name{"name", NcType::Char, {1, 4}, {},
                  std::make_shared<MemorySource>(NcType::Char, std::vector<uint64_t>{5, 6}, std::vector<uint8_t>(30, 'a'))};
    d.variables.push_back(std::move(name));
    return d;
}

TEST(LodDataset, DecimatesAllButRecordKeptStringAndBounds) {
    const Dataset full = sample_dataset();
    ASSERT_TRUE(has_lod_views(full));
    const Dataset lod = make_lod_dataset(full, 2, {"y"});
    EXPECT_EQ(lod.dimensions[0].length, 3u);  // record
    EXPECT_EQ(lod.dimensions[1].length, 5u);  // lod_keep
    EXPECT_EQ(lod.dimensions[2].length, 2u);  // ceil(8 / 4)
    EXPECT_EQ(lod.dimensions[3].length, 2u);  // bounds vertices
    EXPECT_EQ(lod.dimensions[4].length, 6u);  // string length
    for (const auto& v : lod.variables) EXPECT_EQ(v.source->shape(), lod.shape(v)) << v.name;
    EXPECT_EQ(lod.find_attribute("ncafs_lod_factor")->as_double(), 4.0);
    EXPECT_EQ(lod.find_attribute("ncafs_lod_level")->as_double(), 2.0);
    EXPECT_EQ(lod.find_attribute("ncafs_lod_kept_dimensions")->as_text(), "time y nv strlen");
    std::vector<int32_t> x(2);
    lod.find_variable("x")->source->read_linear(0, 2, ByteOrder::Native, x.data());
    EXPECT_EQ(x, (std::vector<int32_t>{0, 4}));
    EXPECT_THROW(make_lod_dataset(full, 0, {}), UsageError);
    EXPECT_THROW(make_lod_dataset(full, kMaxLodLevel + 1, {}), UsageError);
}

TEST(LodDataset, OneDimensionalDatasetsHaveNone) {
    Dataset d;
    d.dimensions = {{"n", 4, false}};
    d.variables.push_back({"v", NcType::Int, {0}, {}, std::make_shared<IndexSource>(std::vector<uint64_t>{4})});
    EXPECT_FALSE(has_lod_views(d));
}

}  // namespace
