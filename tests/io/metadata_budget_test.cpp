// The metadata budget: a charge past the per-file limit or past what remains
// of the total is refused (naming the file, the count and the limit) and
// charges nothing; what a scope charged returns to the total when the scope,
// or the charge taken from it, is gone; nested scopes charge the innermost.
#include "io/metadata_budget.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace ncafs;

constexpr uint64_t kMiB = uint64_t{1} << 20;

class MetadataBudget : public ::testing::Test {
protected:
    void SetUp() override {
        saved_ = metadata_limits();
        set_metadata_limits({10 * kMiB, 16 * kMiB});
    }
    void TearDown() override { set_metadata_limits(saved_); }
    MetadataLimits saved_;
};

std::string refusal(uint64_t count, uint64_t each, const char* what) {
    try {
        charge_metadata(count, each, what);
    } catch (const MetadataBudgetError& e) {
        return e.what();
    }
    return "";
}

TEST_F(MetadataBudget, AFileOverItsLimitIsRefusedNamingItAndTheCount) {
    const uint64_t before = metadata_bytes_in_use();
    MetadataScope scope("/data/many.json");
    charge_metadata(1000, 4096, "arrays");  // 4 MB
    EXPECT_EQ(scope.bytes(), 4096000u);
    const std::string why = refusal(2000, 4096, "arrays");  // 8 MB more: 12 MB > 10 MiB
    EXPECT_NE(why.find("/data/many.json: 2000 arrays"), std::string::npos) << why;
    EXPECT_NE(why.find("max_file_metadata_mem"), std::string::npos) << why;
    EXPECT_EQ(scope.bytes(), 4096000u);  // nothing charged for the refusal
    EXPECT_EQ(metadata_bytes_in_use(), before + 4096000u);
}

TEST_F(MetadataBudget, CountsThatWouldOverflowAreRefused) {
    MetadataScope scope("f");
    EXPECT_NE(refusal(UINT64_MAX / 2, 4096, "variables").find("variables"), std::string::npos);
    EXPECT_EQ(scope.bytes(), 0u);
}

TEST_F(MetadataBudget, TheTotalIsSharedAndGivenBackWhenTheChargeIsDropped) {
    const uint64_t before = metadata_bytes_in_use();
    std::shared_ptr<const MetadataCharge> kept;
    {
        MetadataScope a("a.nc");
        charge_metadata(9, kMiB, "bytes");
        kept = a.take();
    }
    EXPECT_EQ(metadata_bytes_in_use(), before + 9 * kMiB);  // held by what was built
    {
        MetadataScope b("b.nc");
        const std::string why = refusal(8, kMiB, "bytes");  // 9 + 8 > 16 MiB: the total is short
        EXPECT_NE(why.find("max_metadata_mem"), std::string::npos) << why;
        EXPECT_NE(why.find("Cannot allocate memory"), std::string::npos) << why;  // may pass: not remembered
    }
    kept.reset();
    EXPECT_EQ(metadata_bytes_in_use(), before);
    MetadataScope c("c.nc");
    EXPECT_NO_THROW(charge_metadata(8, kMiB, "bytes"));
}

TEST_F(MetadataBudget, AScopeNotTakenGivesItsBytesBackAndNestedScopesChargeTheInnermost) {
    const uint64_t before = metadata_bytes_in_use();
    {
        MetadataScope outer("agg.nca");
        charge_metadata(1, kMiB, "partitions");
        {
            MetadataScope inner("part.nc");
            charge_metadata(2, kMiB, "variables");
            EXPECT_EQ(inner.bytes(), 2 * kMiB);
            EXPECT_EQ(outer.bytes(), kMiB);
        }
        EXPECT_EQ(metadata_bytes_in_use(), before + kMiB);
    }
    EXPECT_EQ(metadata_bytes_in_use(), before);
}

}  // namespace
