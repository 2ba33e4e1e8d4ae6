// Reads of deflated netCDF-4 variables through the DecodedChunkCache
// (codecs/netcdf/chunked_read.hpp) on files netCDF4-python and h5py write at
// test time: every value checked against the formula the writer used, for
// sequential, random and concurrent readers, under a cache so small that it
// evicts all the time; the bytes held never pass the bound, whatever chunk
// shape the file declares.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/netcdf/decoded_chunk_cache.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "chunk_test_suite.hpp"

namespace ncafs::netcdf {
namespace {

namespace fs = std::filesystem;

// v[t, y, x] = t * 10000 + y * 100 + x everywhere (exact in float32 and int32).
constexpr const char* kWriter = R"PY(
import os, sys
import h5py, netCDF4, numpy as np
d = sys.argv[1]
def values(shape, dtype):
    idx = np.indices(shape)
    return (idx[0] * 10000 + idx[1] * 100 + idx[2]).astype(dtype)
with netCDF4.Dataset(os.path.join(d, "chunks.nc"), "w", format="NETCDF4") as ds:
    ds.createDimension("t", None); ds.createDimension("y", 30); ds.createDimension("x", 50)
    ds.createDimension("y2", 300); ds.createDimension("x2", 300); ds.createDimension("n", 1000)
    v = ds.createVariable("v", "f4", ("t", "y", "x"), zlib=True, chunksizes=(4, 15, 25))
    v[:] = values((40, 30, 50), "f4")
    b = ds.createVariable("big", "i4", ("t", "y2", "x2"), zlib=True, chunksizes=(8, 300, 300))
    b[0:8] = values((8, 300, 300), "i4")
    s = ds.createVariable("small", "i2", ("n",), zlib=True, chunksizes=(10,))
    s[:] = np.arange(1000, dtype="i2")
    w = ds.createVariable("whole", "f4", ("t", "y2", "x2"), zlib=True, chunksizes=(1, 100, 200))
    w[0:6, 0:100, 0:200] = values((6, 100, 200), "f4")
    p = ds.createVariable("contiguous", "f4", ("y", "x"))
    p[:] = values((1, 30, 50), "f4")[0]
# A chunk declared far larger than its variable (unlimited dimensions allow it).
with h5py.File(os.path.join(d, "lying.nc"), "w") as f:
    f.create_dataset("w", data=values((3, 20, 40), "f4"), maxshape=(None, None, None),
                     chunks=(100, 100, 100), compression="gzip")
)PY";

float expected(uint64_t t, uint64_t y, uint64_t x) { return static_cast<float>(t * 10000 + y * 100 + x); }

class DecodedChunkCacheTest : public test::ChunkTestSuite<DecodedChunkCacheTest> {
public:
    static constexpr const char* kScript = kWriter;
    static constexpr const char* kPrefix = "ncafs-chunks";

protected:
    // Reads the box and checks every value against the formula.
    static void check_box(const ArraySource& src, std::vector<uint64_t> start, std::vector<uint64_t> count) {
        std::vector<float> out(count[0] * count[1] * count[2]);
        src.read(start, count, ByteOrder::Native, out.data());
        size_t i = 0;
        for (uint64_t t = 0; t < count[0]; ++t)
            for (uint64_t y = 0; y < count[1]; ++y)
                for (uint64_t x = 0; x < count[2]; ++x, ++i)
                    ASSERT_EQ(out[i], expected(start[0] + t, start[1] + y, start[2] + x))
                        << "at " << start[0] + t << "," << start[1] + y << "," << start[2] + x;
    }
    static void random_boxes(const ArraySource& src, unsigned seed, int n) {
        std::mt19937 rng(seed);
        const auto& shape = src.shape();
        for (int k = 0; k < n; ++k) {
            std::vector<uint64_t> start(3), count(3);
            for (size_t d = 0; d < 3; ++d) {
                start[d] = rng() % shape[d];
                count[d] = 1 + rng() % std::min<uint64_t>(shape[d] - start[d], 9);
            }
            check_box(src, start, count);
        }
    }
};

TEST_F(DecodedChunkCacheTest, SequentialAndRandomReadsGiveTheWrittenValues) {
    auto ds = open_netcdf_dataset(OpenFile::open(path("chunks.nc")));
    const ArraySource& v = source(ds, "v");
    for (uint64_t t = 0; t < 40; ++t) check_box(v, {t, 0, 0}, {1, 30, 50});  // one step after another
    EXPECT_EQ(DecodedChunkCache::shared().entries(), 10u * 2u * 2u);        // each chunk kept once
    random_boxes(v, 1, 300);
    check_box(v, {0, 0, 0}, {40, 30, 50});
}

TEST_F(DecodedChunkCacheTest, AReopenedUnchangedFileFindsItsChunks) {
    {
        auto ds = open_netcdf_dataset(OpenFile::open(path("chunks.nc")));
        check_box(source(ds, "v"), {0, 0, 0}, {40, 30, 50});
    }
    const size_t kept = DecodedChunkCache::shared().entries();
    auto again = open_netcdf_dataset(OpenFile::open(path("chunks.nc")));
    check_box(source(again, "v"), {0, 0, 0}, {40, 30, 50});
    EXPECT_EQ(DecodedChunkCache::shared().entries(), kept);
}

TEST_F(DecodedChunkCacheTest, ATinyCacheEvictsAndStaysWithinItsBound) {
    auto& cache = DecodedChunkCache::shared();
    cache.set_capacity(64 << 10);  // a chunk of v is 6,000 bytes: 10 of its 40 chunks fit
    auto ds = open_netcdf_dataset(OpenFile::open(path("chunks.nc")));
    const ArraySource& v = source(ds, "v");
    for (int round = 0; round < 3; ++round) {
        random_boxes(v, 7 + round, 100);
        EXPECT_LE(cache.weight(), cache.capacity());
    }
    check_box(v, {0, 0, 0}, {40, 30, 50});
    EXPECT_LE(cache.weight(), cache.capacity());
    EXPECT_GT(cache.entries(), 0u);
    cache.set_capacity(0);  // nothing kept: every read decodes
    random_boxes(v, 11, 50);
    EXPECT_EQ(cache.entries(), 0u);
    EXPECT_EQ(cache.weight(), 0u);
    cache.set_capacity(DecodedChunkCache::kDefaultCapacity);
}

TEST_F(DecodedChunkCacheTest, ConcurrentReadersUnderEvictionAgree) {
    auto& cache = DecodedChunkCache::shared();
    cache.set_capacity(64 << 10);
    auto ds = open_netcdf_dataset(OpenFile::open(path("chunks.nc")));
    const ArraySource& v = source(ds, "v");
    std::vector<std::thread> readers;
    for (unsigned r = 0; r < 6; ++r)
        readers.emplace_back([&, r] {
            if (r % 2) random_boxes(v, 100 + r, 150);
            else for (uint64_t t = 0; t < 40; ++t) check_box(v, {t, r, 0}, {1, 30 - r, 50});
        });
    for (auto& t : readers) t.join();
    EXPECT_LE(cache.weight(), cache.capacity());
    cache.set_capacity(DecodedChunkCache::kDefaultCapacity);
}

TEST_F(DecodedChunkCacheTest, ChunksBeyondTheBoundAreAskedInBoxesSmallOnesAreKept) {
    auto& cache = DecodedChunkCache::shared();
    cache.set_capacity(1 << 20);  // largest entry 128 KiB; a chunk of big is 2.9 MB
    auto ds = open_netcdf_dataset(OpenFile::open(path("chunks.nc")));
    std::vector<int32_t> big(3 * 300);
    source(ds, "big").read(std::vector<uint64_t>{5, 100, 0}, std::vector<uint64_t>{3, 1, 300}, ByteOrder::Native,
                           big.data());
    for (uint64_t t = 0; t < 3; ++t)
        for (uint64_t x = 0; x < 300; ++x) ASSERT_EQ(big[t * 300 + x], static_cast<int32_t>((5 + t) * 10000 + 100 * 100 + x));
    std::vector<int16_t> small(1000);
    source(ds, "small").read(std::vector<uint64_t>{0}, std::vector<uint64_t>{1000}, ByteOrder::Native, small.data());
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(small[static_cast<size_t>(i)], i);
    std::vector<float> contiguous(30 * 50);
    source(ds, "contiguous").read(std::vector<uint64_t>{0, 0}, std::vector<uint64_t>{30, 50}, ByteOrder::Native,
                                  contiguous.data());
    for (uint64_t y = 0; y < 30; ++y)
        for (uint64_t x = 0; x < 50; ++x) ASSERT_EQ(contiguous[y * 50 + x], expected(0, y, x));
    // contiguous did not go through the cache; small's 100 chunks
    // are read from the file here and kept (the other way to read them is
    // netcdf-c, in a helper process per read); big (8 steps stored of the
    // 40 of its dimension: left to netcdf-c) has a chunk of 2.9 MB, beyond
    // the bound: it is asked for in boxes of one entry at most, of
    // 1 x 108 x 300 elements, and the read touched 3 of them.
    EXPECT_EQ(cache.entries(), 103u);
    cache.set_capacity(DecodedChunkCache::kDefaultCapacity);
}

TEST_F(DecodedChunkCacheTest, WholeLargeChunksAreDecodedInPlaceNotKept) {
    auto& cache = DecodedChunkCache::shared();
    auto ds = open_netcdf_dataset(OpenFile::open(path("chunks.nc")));
    const ArraySource& w = source(ds, "whole");  // chunks of 1 x 100 x 200 floats (80 KB); 300 x 300 of which 100 x 200 written
    std::vector<float> out(6 * 100 * 300);
    w.read(std::vector<uint64_t>{0, 0, 0}, std::vector<uint64_t>{6, 100, 300}, ByteOrder::Native, out.data());
    // No chunk spans the box's rows (x: 0 to 300, chunks of 200): each is kept.
    const size_t kept_after_rows = cache.entries();
    for (uint64_t t = 0; t < 6; ++t)
        for (uint64_t y = 0; y < 100; ++y)
            for (uint64_t x = 0; x < 200; ++x) ASSERT_EQ(out[(t * 100 + y) * 300 + x], expected(t, y, x));
    cache.clear();
    std::vector<float> steps(4 * 100 * 200);  // a box of whole chunks, as a view read in order asks
    for (int pass = 0; pass < 2; ++pass) {
        w.read(std::vector<uint64_t>{1, 0, 0}, std::vector<uint64_t>{4, 100, 200}, ByteOrder::Native, steps.data());
        for (uint64_t t = 0; t < 4; ++t)
            for (uint64_t y = 0; y < 100; ++y)
                for (uint64_t x = 0; x < 200; ++x) ASSERT_EQ(steps[(t * 100 + y) * 200 + x], expected(1 + t, y, x));
        EXPECT_EQ(cache.entries(), 0u);  // decoded in place, twice
    }
    check_box(w, {2, 10, 10}, {1, 5, 5});  // a part of a chunk: kept, for the points around it
    EXPECT_EQ(cache.entries(), 1u);
    EXPECT_GT(kept_after_rows, 0u);
}

TEST_F(DecodedChunkCacheTest, AChunkDeclaredLargerThanItsVariableCountsAsClipped) {
    auto& cache = DecodedChunkCache::shared();
    auto ds = open_netcdf_dataset(OpenFile::open(path("lying.nc")));
    const ArraySource& w = source(ds, "w");
    check_box(w, {0, 0, 0}, {3, 20, 40});
    random_boxes(w, 5, 50);
    ASSERT_EQ(cache.entries(), 1u);  // the whole variable is one chunk
    EXPECT_EQ(cache.weight(), 3u * 20u * 40u * 4u + DecodedChunkCache::kEntryOverhead);
}

}  // namespace
}  // namespace ncafs::netcdf
