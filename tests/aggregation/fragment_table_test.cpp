// FragmentTable: what goes in comes back out (every Fragment field), boxes
// widen from 32 to 64 bits, shared transforms and directories are stored once.
#include <gtest/gtest.h>

#include "aggregation/model/fragment_table.hpp"

using namespace ncafs::agg;

namespace {

Fragment tiny(uint64_t i) {
    Fragment f;
    f.start = {i, 0};
    f.count = {1, 4};
    f.path = "/data/run1/part_" + std::to_string(i) + ".nc";
    f.variable = "tas";
    f.axis_to_master = {0, 1};
    f.declared_shape = {1, 4};
    f.reverse = {false, false};
    f.where = "tas:nca_array Partitions[" + std::to_string(i) + "]";
    return f;
}

void expect_same(const Fragment& a, const Fragment& b) {
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.variable, b.variable);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.varid, b.varid);
    EXPECT_EQ(a.constant, b.constant);
    EXPECT_EQ(a.axis_to_master, b.axis_to_master);
    EXPECT_EQ(a.declared_shape, b.declared_shape);
    ASSERT_EQ(a.part.size(), b.part.size());
    for (size_t k = 0; k < a.part.size(); ++k) {
        ASSERT_EQ(a.part[k].has_value(), b.part[k].has_value());
        if (!a.part[k]) continue;
        EXPECT_EQ(a.part[k]->is_list, b.part[k]->is_list);
        EXPECT_EQ(a.part[k]->first, b.part[k]->first);
        EXPECT_EQ(a.part[k]->step, b.part[k]->step);
        EXPECT_EQ(a.part[k]->count, b.part[k]->count);
        EXPECT_EQ(a.part[k]->list, b.part[k]->list);
    }
    EXPECT_EQ(a.reverse, b.reverse);
    EXPECT_EQ(a.units.scale, b.units.scale);
    EXPECT_EQ(a.units.offset, b.units.offset);
    EXPECT_EQ(a.units_text, b.units_text);
    EXPECT_EQ(a.declared_type, b.declared_type);
    EXPECT_EQ(a.where, b.where);
}

}  // namespace

TEST(FragmentTable, RoundTripsEveryField) {
    FragmentTable t;
    t.set_where_of([](size_t i) { return "tas:nca_array Partitions[" + std::to_string(i) + "]"; });
    std::vector<Fragment> in;
    for (uint64_t i = 0; i < 5; ++i) in.push_back(tiny(i));
    in[1].kind = FragmentKind::Self;
    in[1].path = "/agg.nc";
    in[2].part = {IndexSelection{false, 3, -1, 2, {}}, std::nullopt};
    in[2].reverse = {true, false};
    in[2].units = Affine{1.0, 273.15};
    in[2].units_text = "degC -> K";
    in[2].declared_type = ncafs::NcType::Float;
    in[3].varid = 7;
    in[3].variable.clear();
    in[3].group = "/g";
    in[3].where = "somewhere else";  // not what where_of gives: stored for this row
    in[4].kind = FragmentKind::Constant;
    in[4].constant = {1, 2, 3, 4};
    in[4].declared_shape = {4, 1};  // differs from count: stored, not the flag
    for (const auto& f : in) t.push_back(f);
    ASSERT_EQ(t.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        SCOPED_TRACE(i);
        expect_same(t[i], in[i]);
        EXPECT_EQ(t.path(i), in[i].path);
        EXPECT_TRUE(t.path_is(i, in[i].path));
        EXPECT_FALSE(t.path_is(i, in[i].path + "x"));
        EXPECT_FALSE(t.path_is(i, in[i].path.substr(1)));
        EXPECT_FALSE(t.path_is(i, "/data/run2/part_" + std::to_string(i) + ".nc"));
        EXPECT_EQ(t.where(i), in[i].where);
        EXPECT_EQ(t.element_count(i), 4u);
    }
    size_t n = 0;
    for (const auto& f : t) expect_same(f, in[n++]);
    EXPECT_EQ(n, in.size());
    EXPECT_THROW(t.at(5), std::out_of_range);
}

TEST(FragmentTable, SamePathsComparesKindsAndPathsRowByRow) {
    FragmentTable a, b, other_dir, other_kind, shorter;
    for (uint64_t i = 0; i < 4; ++i) {
        Fragment f = tiny(i);
        a.push_back(f);
        f.variable = "time";  // another variable of the same files
        b.push_back(f);
        f.path = (i == 2 ? "/data/run2/part_" : "/data/run1/part_") + std::to_string(i) + ".nc";
        other_dir.push_back(f);
        f = tiny(i);
        if (i == 3) f.kind = FragmentKind::Missing;
        other_kind.push_back(f);
        if (i < 3) shorter.push_back(tiny(i));
    }
    EXPECT_TRUE(a.same_paths(b));
    EXPECT_TRUE(b.same_paths(a));
    EXPECT_FALSE(a.same_paths(other_dir));
    EXPECT_FALSE(a.same_paths(other_kind));
    EXPECT_FALSE(a.same_paths(shorter));
}

TEST(FragmentTable, WidensBoxesPast32Bits) {
    FragmentTable t;
    t.push_back(tiny(0));
    Fragment big = tiny(1);
    big.start = {uint64_t{1} << 40, 5};
    big.count = {UINT64_MAX - (uint64_t{1} << 40), 1};
    t.push_back(big);
    t.push_back(tiny(2));
    expect_same(t[0], tiny(0));
    expect_same(t[1], big);
    expect_same(t[2], tiny(2));
}

TEST(FragmentTable, RejectsMixedRanks) {
    FragmentTable t;
    t.push_back(tiny(0));
    Fragment f = tiny(1);
    f.start = {1, 0, 0};
    f.count = {1, 1, 1};
    EXPECT_THROW(t.push_back(f), std::invalid_argument);
}

TEST(FragmentTable, BoxesPlacedLaterAndSharedTransformsRewritten) {
    FragmentTable t;
    t.set_rank(2);
    for (uint64_t i = 0; i < 3; ++i) {
        Fragment f = tiny(i);
        f.start.clear(), f.count.clear();
        f.variable = "/grp/tas";
        t.push_back(f);
    }
    for (uint64_t i = 0; i < 3; ++i) {
        std::vector<uint64_t> s{i, 0}, c{1, 4};
        t.set_box(i, s, c);
    }
    t.rewrite_transforms([](Fragment& f) { f.group = "/grp", f.variable = "tas"; });
    for (uint64_t i = 0; i < 3; ++i) {
        Fragment f = t[i];
        EXPECT_EQ(f.start, (std::vector<uint64_t>{i, 0}));
        EXPECT_EQ(f.group, "/grp");
        EXPECT_EQ(f.variable, "tas");
        EXPECT_EQ(f.path, tiny(i).path);
    }
}

// A million-partition table must stay under 60 bytes a partition: here the
// bytes per partition of 100,000 partitions that differ only in box and file.
TEST(FragmentTable, CompactForManyPartitions) {
    FragmentTable t;
    t.set_where_of([](size_t i) { return "tas:nca_array Partitions[" + std::to_string(i) + "]"; });
    const size_t n = 100'000;
    t.reserve(n);
    for (uint64_t i = 0; i < n; ++i) t.push_back(tiny(i));
    const double per_partition = static_cast<double>(t.memory_bytes()) / n;
    EXPECT_LT(per_partition, 60.0);  // box 16 + kind 1 + directory 4 + name 8+~12 + transform 4
    expect_same(t[n - 1], tiny(n - 1));
}

// push_back(f, transform_id): partitions given an interned transform read
// back exactly as those pushed one by one, and share its one stored copy.
TEST(FragmentTable, PushBackWithTransformIdMatchesPushBackWithoutOne) {
    FragmentTable without_id, shared;
    for (auto* t : {&without_id, &shared})
        t->set_where_of([](size_t i) { return "tas:nca_array Partitions[" + std::to_string(i) + "]"; });
    const uint32_t id = shared.transform_id(tiny(0));
    for (uint64_t i = 0; i < 50; ++i) {
        Fragment f = tiny(i);
        f.where.clear();  // where_of's
        without_id.push_back(f);
        shared.push_back(f, id);
    }
    Fragment other = tiny(50);
    other.variable = "pr";
    shared.push_back(other, shared.transform_id(other));
    without_id.push_back(other);
    ASSERT_EQ(shared.size(), without_id.size());
    for (size_t i = 0; i < without_id.size(); ++i) expect_same(shared[i], without_id[i]);
    EXPECT_EQ(shared[50].variable, "pr");
    EXPECT_EQ(shared.memory_bytes(), without_id.memory_bytes());
}
