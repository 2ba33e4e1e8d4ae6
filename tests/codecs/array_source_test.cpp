#include "codecs/array_source.hpp"

#include <gtest/gtest.h>

#include <random>

#include "codecs/error.hpp"

namespace ncafs {
namespace {

// Enumerates the run element by element with an independent index counter and
// checks that the boxes cover exactly [first, first+n) in order.
void check_decomposition(const std::vector<uint64_t>& shape, uint64_t first, uint64_t n) {
    std::vector<uint64_t> linear;
    size_t boxes = 0;
    for_each_linear_box(shape, first, n, [&](std::span<const uint64_t> start, std::span<const uint64_t> count,
                                             uint64_t before) {
        ++boxes;
        EXPECT_EQ(before, linear.size());
        std::vector<uint64_t> idx(start.begin(), start.end());
        uint64_t total = 1;
        for (auto c : count) total *= c;
        for (uint64_t k = 0; k < total; ++k) {
            uint64_t off = 0;
            for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
            linear.push_back(off);
            for (size_t d = shape.size(); d-- > 0;) {
                if (++idx[d] < start[d] + count[d]) break;
                idx[d] = start[d];
            }
        }
    });
    ASSERT_EQ(linear.size(), n);
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(linear[i], first + i);
    EXPECT_LE(boxes, shape.empty() ? 1u : 2 * shape.size() - 1);
}

TEST(LinearBoxes, RandomRunsCoverExactly) {
    std::mt19937_64 rng(42);
    for (int iter = 0; iter < 500; ++iter) {
        std::vector<uint64_t> shape(1 + rng() % 4);
        uint64_t total = 1;
        for (auto& s : shape) {
            s = 1 + rng() % 6;
            total *= s;
        }
        uint64_t first = rng() % total;
        uint64_t n = 1 + rng() % (total - first);
        check_decomposition(shape, first, n);
    }
}

TEST(LinearBoxes, ScalarAndErrors) {
    check_decomposition({}, 0, 1);
    EXPECT_THROW(for_each_linear_box({3, 4}, 10, 3, [](auto, auto, auto) {}), UsageError);
    EXPECT_THROW(check_box({3, 4}, std::vector<uint64_t>{1, 2}, std::vector<uint64_t>{3, 1}, "x"), UsageError);
}

}  // namespace
}  // namespace ncafs
