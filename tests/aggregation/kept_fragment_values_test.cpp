// KeptFragmentValues (aggregation/read/kept_fragment_values.hpp): values kept
// by fragment, served only under the generation they were read in, within
// the budget.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "aggregation/read/kept_fragment_values.hpp"

using ncafs::agg::KeptFragmentValues;

namespace {

std::vector<uint8_t> bytes(uint8_t first, size_t n) {
    std::vector<uint8_t> out(n);
    for (size_t k = 0; k < n; ++k) out[k] = static_cast<uint8_t>(first + k);
    return out;
}

TEST(KeptFragmentValues, ServesWhatWasKeptUnderItsGeneration) {
    KeptFragmentValues kept;
    kept.keep(5, 1, bytes(10, 16));
    kept.keep(4096 + 7, 1, bytes(50, 16));  // another page
    std::vector<uint8_t> out;
    ASSERT_TRUE(kept.find(5, 1, out));
    EXPECT_EQ(out, bytes(10, 16));
    ASSERT_TRUE(kept.find(4096 + 7, 1, out));
    EXPECT_EQ(out, bytes(50, 16));
    EXPECT_FALSE(kept.find(6, 1, out));  // same page, not kept
    EXPECT_FALSE(kept.find(5, 2, out));  // a partition changed since
    EXPECT_FALSE(kept.has(5, 2));
    kept.keep(6, 2, bytes(90, 16));  // the page starts again under the new generation
    EXPECT_FALSE(kept.has(5, 2));
    EXPECT_TRUE(kept.find(6, 2, out));
    EXPECT_EQ(out, bytes(90, 16));
}

TEST(KeptFragmentValues, KeepsOnlySmallFragmentsOfThePagesSize) {
    KeptFragmentValues kept;
    kept.keep(1, 0, bytes(0, KeptFragmentValues::kMaxBytes + 1));
    EXPECT_FALSE(kept.has(1, 0));
    kept.keep(1, 0, bytes(0, 16));
    kept.keep(2, 0, bytes(0, 8));  // another size in the same page: not kept
    EXPECT_TRUE(kept.has(1, 0));
    EXPECT_FALSE(kept.has(2, 0));
}

TEST(KeptFragmentValues, DropsTheLeastRecentPagesBeyondTheBudget) {
    KeptFragmentValues kept;
    const size_t size = 16, pages = KeptFragmentValues::kBudgetBytes / (KeptFragmentValues::kPageFragments * size);
    for (size_t p = 0; p <= pages; ++p) kept.keep(p * KeptFragmentValues::kPageFragments, 0, bytes(1, size));
    EXPECT_FALSE(kept.has(0, 0));  // the first page made room for the last
    EXPECT_TRUE(kept.has(KeptFragmentValues::kPageFragments, 0));
    EXPECT_TRUE(kept.has(pages * KeptFragmentValues::kPageFragments, 0));
}

}  // namespace
