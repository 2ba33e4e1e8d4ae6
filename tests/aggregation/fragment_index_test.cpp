// The pure index arithmetic of reading a fragment (aggregation/model/
// fragment_index.hpp), on values in memory: expected results worked out by hand;
// the numpy line in each comment gives the same answer.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "aggregation/model/fragment_index.hpp"

using namespace ncafs::agg;

namespace {

// A fragment at [start, start + count) of master space whose source axes map
// to master dims `axes` (-1: an extra size-1 axis).
Fragment fragment(std::vector<uint64_t> start, std::vector<uint64_t> count, std::vector<int> axes) {
    Fragment f;
    f.reverse.assign(start.size(), false);
    f.start = std::move(start);
    f.count = std::move(count);
    f.axis_to_master = std::move(axes);
    return f;
}

IndexSelection arithmetic(int64_t first, int64_t step, uint64_t count) {
    IndexSelection s;
    s.first = first, s.step = step, s.count = count;
    return s;
}

IndexSelection listed(std::vector<uint64_t> list) {
    IndexSelection s;
    s.is_list = true;
    s.list = std::move(list);
    return s;
}

// The box `box` of a source whose element at C-order offset o holds the
// value o (numpy: np.arange(n).reshape(shape)[box]), one byte each.
std::vector<uint8_t> box_of_arange(const std::vector<uint64_t>& shape, const SourceBox& box) {
    std::vector<uint8_t> out;
    const size_t rank = shape.size();
    std::vector<uint64_t> i(rank, 0);
    while (true) {
        uint64_t o = 0;
        for (size_t d = 0; d < rank; ++d) o = o * shape[d] + box.lo[d] + i[d];
        out.push_back(static_cast<uint8_t>(o));
        size_t d = rank;
        while (d-- > 0) {
            if (++i[d] < box.count[d]) break;
            i[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
    }
    return out;
}

std::vector<uint8_t> gather(const Fragment& f, const std::vector<uint64_t>& source_shape,
                            const std::vector<uint64_t>& local, const std::vector<uint64_t>& len) {
    const SourceIndex index{f, local};
    const SourceBox box = source_box(f, index, len);
    const auto src = box_of_arange(source_shape, box);
    return gather_master_order(f, index, len, box, src.data(), 1);
}

using Bytes = std::vector<uint8_t>;
using Ints = std::vector<uint64_t>;

}  // namespace

TEST(FragmentIndex, ReversedAxisReadsBackwards) {
    // Fragment of 5 at master [10, 15), stored the other way; master [12, 14):
    // np.arange(5)[::-1][2:4] == [2, 1]
    Fragment f = fragment({10}, {5}, {0});
    f.reverse = {true};
    const Ints local{2}, len{2};
    const SourceIndex index{f, local};
    EXPECT_EQ(index(0, 0), 2u);
    EXPECT_EQ(index(0, 1), 1u);
    const SourceBox box = source_box(f, index, len);
    EXPECT_EQ(box.lo, Ints{1});
    EXPECT_EQ(box.count, Ints{2});
    EXPECT_EQ(gather(f, {5}, local, len), (Bytes{2, 1}));
}

TEST(FragmentIndex, PermutedAxesGatherTransposed) {
    // Source (3, 2) whose axis 0 is master dim 1: the master (2, 3) is its transpose.
    // np.arange(6).reshape(3, 2).T.ravel() == [0, 2, 4, 1, 3, 5]
    const Fragment f = fragment({0, 0}, {2, 3}, {1, 0});
    const Ints local{0, 0}, len{2, 3};
    const SourceBox box = source_box(f, SourceIndex{f, local}, len);
    EXPECT_EQ(box.lo, (Ints{0, 0}));
    EXPECT_EQ(box.count, (Ints{3, 2}));
    EXPECT_EQ(gather(f, {3, 2}, local, len), (Bytes{0, 2, 4, 1, 3, 5}));
}

TEST(FragmentIndex, PermutedPieceReadsOnlyItsBox) {
    // Master [1:2, 1:3] of the transpose above:
    // np.arange(6).reshape(3, 2).T[1:2, 1:3].ravel() == [3, 5], from source box [1:3, 1:2].
    const Fragment f = fragment({0, 0}, {2, 3}, {1, 0});
    const Ints local{1, 1}, len{1, 2};
    const SourceBox box = source_box(f, SourceIndex{f, local}, len);
    EXPECT_EQ(box.lo, (Ints{1, 1}));
    EXPECT_EQ(box.count, (Ints{2, 1}));
    EXPECT_EQ(gather(f, {3, 2}, local, len), (Bytes{3, 5}));
}

TEST(FragmentIndex, PermutedGatherCopiesWholeElements) {
    // As PermutedAxesGatherTransposed with 4-byte elements: no byte of one
    // element lands in another. np.arange(6, dtype='i4').reshape(3, 2).T.ravel()
    const Fragment f = fragment({0, 0}, {2, 3}, {1, 0});
    const Ints local{0, 0}, len{2, 3};
    const SourceIndex index{f, local};
    const SourceBox box = source_box(f, index, len);
    std::vector<int32_t> src(6);
    std::iota(src.begin(), src.end(), 1000);
    const auto bytes = gather_master_order(f, index, len, box, reinterpret_cast<const uint8_t*>(src.data()), 4);
    std::vector<int32_t> got(6);
    ASSERT_EQ(bytes.size(), 24u);
    std::memcpy(got.data(), bytes.data(), bytes.size());
    EXPECT_EQ(got, (std::vector<int32_t>{1000, 1002, 1004, 1001, 1003, 1005}));
}

TEST(FragmentIndex, ArithmeticPartSelectsEveryThird) {
    // part 1:8:3 of a source axis of 10: np.arange(10)[1:8:3] == [1, 4, 7], from box [1:8].
    Fragment f = fragment({0}, {3}, {0});
    f.part = {arithmetic(1, 3, 3)};
    const Ints local{0}, len{3};
    const SourceBox box = source_box(f, SourceIndex{f, local}, len);
    EXPECT_EQ(box.lo, Ints{1});
    EXPECT_EQ(box.count, Ints{7});
    EXPECT_EQ(gather(f, {10}, local, len), (Bytes{1, 4, 7}));
}

TEST(FragmentIndex, ListPartKeepsItsOrder) {
    // part [5, 2, 8]: np.arange(10)[[5, 2, 8]] == [5, 2, 8], from box [2:9].
    Fragment f = fragment({0}, {3}, {0});
    f.part = {listed({5, 2, 8})};
    const Ints local{0}, len{3};
    const SourceBox box = source_box(f, SourceIndex{f, local}, len);
    EXPECT_EQ(box.lo, Ints{2});
    EXPECT_EQ(box.count, Ints{7});
    EXPECT_EQ(gather(f, {10}, local, len), (Bytes{5, 2, 8}));
}

TEST(FragmentIndex, ReversedPartRunsBackwards) {
    // Reversal before part: np.arange(10)[1:8:3][::-1] == [7, 4, 1].
    Fragment f = fragment({0}, {3}, {0});
    f.reverse = {true};
    f.part = {arithmetic(1, 3, 3)};
    EXPECT_EQ(gather(f, {10}, {0}, {3}), (Bytes{7, 4, 1}));
}

TEST(FragmentIndex, InsertedSizeOneAxis) {
    // Source (1, 3) (a leading size-1 axis the master lacks); master [1:3]:
    // np.arange(3).reshape(1, 3)[0, 1:3] == [1, 2], from box [0:1, 1:3].
    const Fragment f = fragment({0}, {3}, {-1, 0});
    const Ints local{1}, len{2};
    EXPECT_EQ(piece_axis_length(f, len, 0), 1u);
    EXPECT_EQ(piece_axis_length(f, len, 1), 2u);
    const SourceBox box = source_box(f, SourceIndex{f, local}, len);
    EXPECT_EQ(box.lo, (Ints{0, 1}));
    EXPECT_EQ(box.count, (Ints{1, 2}));
    EXPECT_EQ(gather(f, {1, 3}, local, len), (Bytes{1, 2}));
}

TEST(FragmentIndex, SizeOneAxisWithPartPicksOneIndex) {
    // Source (4, 3), part selecting index 2 of the axis the master lacks:
    // np.arange(12).reshape(4, 3)[2, :] == [6, 7, 8], from box [2:3, 0:3].
    Fragment f = fragment({0}, {3}, {-1, 0});
    f.part = {arithmetic(2, 1, 1), std::nullopt};
    const Ints local{0}, len{3};
    const SourceBox box = source_box(f, SourceIndex{f, local}, len);
    EXPECT_EQ(box.lo, (Ints{2, 0}));
    EXPECT_EQ(box.count, (Ints{1, 3}));
    EXPECT_EQ(gather(f, {4, 3}, local, len), (Bytes{6, 7, 8}));
}

TEST(FragmentIndex, SparsestAxisIsTheWidestBoxOverItsElements) {
    // Axis 1 selects [0, 99]: a box of 100 for 2 elements (excess 98); axis 0 none.
    Fragment f = fragment({0, 0}, {4, 2}, {0, 1});
    f.part = {std::nullopt, listed({0, 99})};
    const Ints local{0, 0}, len{4, 2};
    const SourceBox box = source_box(f, SourceIndex{f, local}, len);
    EXPECT_EQ(box.count, (Ints{4, 100}));
    EXPECT_EQ(sparsest_axis(f, len, box), 1u);
}

TEST(FragmentIndex, PieceOfRequestClipsToTheFragment) {
    // Request rows [2, 6) x cols [0, 6), fragment rows [4, 8) x cols [3, 7):
    // they meet in rows [4, 6) x cols [3, 6), at (2, 3) inside the request.
    const PieceOfRequest p = piece_of_request({2, 0}, {4, 6}, {4, 3}, {4, 4});
    EXPECT_EQ(p.lo, (Ints{4, 3}));
    EXPECT_EQ(p.len, (Ints{2, 3}));
    EXPECT_EQ(p.at, (Ints{2, 3}));
    EXPECT_FALSE(p.whole);
    const PieceOfRequest inside = piece_of_request({5, 4}, {2, 2}, {4, 3}, {4, 4});
    EXPECT_EQ(inside.lo, (Ints{5, 4}));
    EXPECT_EQ(inside.len, (Ints{2, 2}));
    EXPECT_EQ(inside.at, (Ints{0, 0}));
    EXPECT_TRUE(inside.whole);
}

TEST(FragmentIndex, UnravelIndexInCOrder) {
    // np.unravel_index(17, (2, 3, 4)) == (1, 1, 1); np.unravel_index(23, (2, 3, 4)) == (1, 2, 3)
    EXPECT_EQ(unravel_index(17, {2, 3, 4}), (Ints{1, 1, 1}));
    EXPECT_EQ(unravel_index(23, {2, 3, 4}), (Ints{1, 2, 3}));
    EXPECT_EQ(unravel_index(0, {}), Ints{});
    EXPECT_EQ(unravel_index(0, {2, 0, 4}), std::nullopt);
}

TEST(FragmentIndex, BoxInsideAndOffsetInBox) {
    // Fragment rows [4, 8) x cols [3, 7). Element (5, 4) lies at 1 * 4 + 1 = 5
    // of its C order: np.ravel_multi_index((5 - 4, 4 - 3), (4, 4)) == 5.
    const Ints start{4, 3}, count{4, 4};
    EXPECT_EQ(offset_in_box({5, 4}, start, count), 5u);
    EXPECT_EQ(offset_in_box({7, 6}, start, count), 15u);
    const Ints run_start{5, 3}, run_count{1, 4}, past_start{5, 4};
    EXPECT_TRUE(box_inside(run_start, run_count, start, count));
    EXPECT_FALSE(box_inside(past_start, run_count, start, count));  // cols [4, 8) leave the fragment
}
