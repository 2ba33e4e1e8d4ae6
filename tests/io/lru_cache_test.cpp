// LruCache: the bound, the recency order (get refreshes, put replaces), erase_if
// and set_capacity, on small integer maps whose expected content is written out.
#include "io/lru_cache.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using ncafs::LruCache;

TEST(LruCache, EvictsTheLeastRecentlyUsedBeyondTheBound) {
    LruCache<int, std::string> cache(2);
    cache.put(1, "one");
    cache.put(2, "two");
    ASSERT_EQ(cache.get(1), "one");  // 1 is now the most recent
    cache.put(3, "three");           // evicts 2
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_FALSE(cache.get(2));
    EXPECT_EQ(cache.get(1), "one");
    EXPECT_EQ(cache.get(3), "three");
}

TEST(LruCache, PutReplacesAndRefreshes) {
    LruCache<int, int> cache(2);
    cache.put(1, 10);
    cache.put(2, 20);
    cache.put(1, 11);  // replaces, 1 most recent
    cache.put(3, 30);  // evicts 2
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.get(1), 11);
    EXPECT_FALSE(cache.get(2));
}

TEST(LruCache, SetCapacityTrimsAndEraseIfDrops) {
    LruCache<int, std::shared_ptr<int>> cache(4);
    auto held = std::make_shared<int>(2);
    cache.put(1, std::make_shared<int>(1));
    cache.put(2, held);
    cache.put(3, std::make_shared<int>(3));
    cache.put(4, std::make_shared<int>(4));
    // Only entries nobody else holds are idle.
    EXPECT_EQ(cache.erase_if([](const int&, const std::shared_ptr<int>& v) { return v.use_count() == 1; }), 3u);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.get(2), held);
    cache.put(5, std::make_shared<int>(5));
    cache.put(6, std::make_shared<int>(6));
    cache.set_capacity(1);  // keeps only the most recent: 6
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_TRUE(cache.get(6));
    EXPECT_FALSE(cache.get(2));
    cache.set_capacity(0);
    EXPECT_EQ(cache.size(), 0u);
}

TEST(LruCache, ByteWeightBoundsTheTotalSize) {
    using Buffer = std::shared_ptr<const std::vector<uint8_t>>;
    LruCache<int, Buffer, std::hash<int>, ncafs::ByteWeight> cache(100);
    auto bytes = [](size_t n) { return std::make_shared<const std::vector<uint8_t>>(n); };
    cache.put(1, bytes(40));
    cache.put(2, bytes(40));
    EXPECT_EQ(cache.weight(), 80u);
    cache.put(3, bytes(40));  // 120 > 100: evicts 1
    EXPECT_EQ(cache.weight(), 80u);
    EXPECT_FALSE(cache.contains(1));
    cache.put(2, bytes(10));  // replacing re-weighs
    EXPECT_EQ(cache.weight(), 50u);
    cache.put(4, bytes(500));  // heavier than the capacity: nothing survives
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_EQ(cache.weight(), 0u);
}

}  // namespace
