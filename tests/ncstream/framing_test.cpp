// Varints against hand-computed encodings, and the slab plan.
#include <gtest/gtest.h>

#include <memory>

#include "codecs/array_source.hpp"
#include "codecs/ncstream/framing.hpp"
#include "codecs/ncstream/message_builder.hpp"

namespace ncafs::ncstream {
namespace {

std::vector<uint8_t> enc(uint64_t v) {
    uint8_t b[10];
    size_t n = encode_varint(v, b);
    EXPECT_EQ(n, varint_size(v));
    return {b, b + n};
}

TEST(NcstreamVarint, KnownEncodings) {
    EXPECT_EQ(enc(0), (std::vector<uint8_t>{0x00}));
    EXPECT_EQ(enc(127), (std::vector<uint8_t>{0x7f}));
    EXPECT_EQ(enc(128), (std::vector<uint8_t>{0x80, 0x01}));
    EXPECT_EQ(enc(300), (std::vector<uint8_t>{0xac, 0x02}));  // the protobuf documentation's example
    EXPECT_EQ(enc(702808), (std::vector<uint8_t>{0xd8, 0xf2, 0x2a}));
    EXPECT_EQ(enc((uint64_t{1} << 63) - 1).size(), 9u);
    EXPECT_EQ(enc(UINT64_MAX).size(), 10u);
}

TEST(NcstreamVarint, DecodeAndLimits) {
    const uint8_t b300[] = {0xac, 0x02, 0xff};
    auto r = decode_varint(b300);
    EXPECT_EQ(r.status, VarintResult::Status::Ok);
    EXPECT_EQ(r.value, 300u);
    EXPECT_EQ(r.length, 2u);
    const uint8_t cut[] = {0xac};
    EXPECT_EQ(decode_varint(cut).status, VarintResult::Status::NeedMore);
    EXPECT_EQ(decode_varint({}).status, VarintResult::Status::NeedMore);
    const uint8_t max63[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    r = decode_varint(max63);
    EXPECT_EQ(r.status, VarintResult::Status::Ok);
    EXPECT_EQ(r.value, (uint64_t{1} << 63) - 1);
    const uint8_t past63[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    EXPECT_EQ(decode_varint(past63).status, VarintResult::Status::TooLarge);
    std::vector<uint8_t> endless(100, 0xff);
    EXPECT_EQ(decode_varint(endless).status, VarintResult::Status::TooLarge);
}

// A source that is never read: slab planning needs metadata only.
class ShapeOnly final : public ArraySource {
public:
    ShapeOnly(NcType t, std::vector<uint64_t> s) : t_(t), s_(std::move(s)) {}
    NcType type() const override { return t_; }
    const std::vector<uint64_t>& shape() const override { return s_; }
    void read(std::span<const uint64_t>, std::span<const uint64_t>, ByteOrder, void*) const override {
        throw std::logic_error("not read");
    }

private:
    NcType t_;
    std::vector<uint64_t> s_;
};

Dataset one_variable(NcType t, std::vector<uint64_t> shape) {
    Dataset ds;
    Variable v{"v", t, {}, {}, std::make_shared<ShapeOnly>(t, shape)};
    for (size_t k = 0; k < shape.size(); ++k) {
        ds.dimensions.push_back(Dimension{"d" + std::to_string(k), shape[k], false});
        v.dimids.push_back(k);
    }
    ds.variables.push_back(v);
    return ds;
}

// Slabs must be contiguous, in order, cover the variable, and each fit.
void expect_tiling(const Dataset& ds, const std::vector<Slab>& slabs, uint64_t limit) {
    const auto shape = ds.shape(ds.variables[0]);
    uint64_t next = 0;
    for (const Slab& s : slabs) {
        EXPECT_EQ(s.first_element, next);
        uint64_t n = 1, lin = 0;
        for (size_t k = 0; k < shape.size(); ++k) {
            n *= s.count[k];
            lin = lin * shape[k] + s.start[k];
        }
        EXPECT_EQ(s.element_count, n);
        EXPECT_EQ(lin, s.first_element);
        EXPECT_LE(slab_payload_bytes(ds, s), limit);
        next += n;
    }
    EXPECT_EQ(next, element_count(shape));
}

TEST(NcstreamSlabs, WholeVariableWhenItFits) {
    auto ds = one_variable(NcType::Double, {10, 10});
    auto slabs = plan_slabs(ds, 800);
    ASSERT_EQ(slabs.size(), 1u);
    EXPECT_EQ(slabs[0].count, (std::vector<uint64_t>{10, 10}));
}

TEST(NcstreamSlabs, SplitAlongOutermostAxis) {
    auto ds = one_variable(NcType::Float, {10, 6});  // 24 bytes per row
    auto slabs = plan_slabs(ds, 100);               // 4 rows per slab
    ASSERT_EQ(slabs.size(), 3u);
    EXPECT_EQ(slabs[0].start, (std::vector<uint64_t>{0, 0}));
    EXPECT_EQ(slabs[0].count, (std::vector<uint64_t>{4, 6}));
    EXPECT_EQ(slabs[2].start, (std::vector<uint64_t>{8, 0}));
    EXPECT_EQ(slabs[2].count, (std::vector<uint64_t>{2, 6}));
    expect_tiling(ds, slabs, 100);
}

TEST(NcstreamSlabs, RowTooBigSplitsInnerAxis) {
    auto ds = one_variable(NcType::Short, {3, 7, 5});  // one index of axis 0 = 70 bytes
    auto slabs = plan_slabs(ds, 40);                   // axis 1 rows of 10 bytes, 4 per slab
    expect_tiling(ds, slabs, 40);
    ASSERT_EQ(slabs.size(), 6u);
    EXPECT_EQ(slabs[1].start, (std::vector<uint64_t>{0, 4, 0}));
    EXPECT_EQ(slabs[1].count, (std::vector<uint64_t>{1, 3, 5}));
}

TEST(NcstreamSlabs, ZeroSizeAndScalarAreOneSlab) {
    auto ds = one_variable(NcType::Int, {0, 4});
    auto slabs = plan_slabs(ds, 4);
    ASSERT_EQ(slabs.size(), 1u);
    EXPECT_EQ(slabs[0].element_count, 0u);
    auto sc = one_variable(NcType::Int, {});
    ASSERT_EQ(plan_slabs(sc, 4).size(), 1u);
}

}  // namespace
}  // namespace ncafs::ncstream
