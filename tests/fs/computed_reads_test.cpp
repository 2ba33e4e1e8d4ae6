// What a read of a computed view computes (fs/view_read.hpp, fs/view_block_cache.hpp ViewBlockCache,
// fs/readahead.hpp): a point read little more than its request, a
// sequential reader runs computed ahead of it on the pool, every byte once
// and as the view defines it, with concurrent readers too; a miss plans
// only the bytes its reader did not realize already; a run computed
// ahead that fails leaves the bytes asked for to decide.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "codecs/error.hpp"
#include "codecs/virtual_file.hpp"
#include "fs/view_block_cache.hpp"
#include "fs/view_read.hpp"
#include "fs/readahead.hpp"

namespace ncafs::fs {
namespace {

uint8_t byte_at(uint64_t offset) { return static_cast<uint8_t>((offset * 131 + offset / 4099) & 0xff); }

// A computed file whose byte at offset is byte_at(offset); counts what it computes.
class CountingFile final : public VirtualFile {
public:
    explicit CountingFile(uint64_t size) : size_(size) {}
    uint64_t size() const override { return size_; }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        calls++;
        bytes += out.size();
        for (size_t i = 0; i < out.size(); ++i) out[i] = byte_at(offset + i);
    }
    mutable std::atomic<uint64_t> calls{0}, bytes{0};

private:
    uint64_t size_;
};

void expect_bytes(std::span<const uint8_t> got, uint64_t offset) {
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], byte_at(offset + i)) << "at " << offset + i;
}

constexpr uint64_t kMiB = 1 << 20;

TEST(Readahead, NoneForJumpsGrowingForAReaderThatContinues) {
    Readahead ra;
    EXPECT_EQ(ra.after(0, 4096), 0u);  // the first read: nothing known yet
    EXPECT_EQ(ra.after(40 * kMiB, 4096), 0u);
    EXPECT_EQ(ra.after(7 * kMiB, 4096), 0u);
    uint64_t expected = Readahead::kFirst, at = 10 * kMiB;
    ra.after(at, 128 << 10);
    for (int i = 0; i < 8; ++i) {
        at += 128 << 10;
        EXPECT_EQ(ra.after(at, 128 << 10), expected);
        expected = std::min(expected * 2, Readahead::kLargest);
    }
    // The kernel's requests served out of order still continue; a jump resets.
    EXPECT_EQ(ra.after(at - (256 << 10), 128 << 10), Readahead::kLargest);
    EXPECT_EQ(ra.after(at + kMiB, 128 << 10), Readahead::kLargest);  // the kernel's readahead, ahead
    EXPECT_EQ(ra.after(at + 64 * kMiB, 4096), 0u);
    EXPECT_EQ(ra.after(at - 3 * kMiB, 4096), 0u);
}

TEST(ViewBlockCache, APointReadComputesOneBlock) {
    auto file = std::make_shared<CountingFile>(64 * kMiB);
    ViewBlockCache cache(32 * kMiB);
    std::mt19937_64 rng(3);
    std::vector<uint8_t> out(4096);
    for (int i = 0; i < 200; ++i) {
        const uint64_t offset = rng() % (file->size() - out.size());
        const uint64_t before = file->bytes;
        cache.read(file, offset, out, 0);
        expect_bytes(out, offset);
        EXPECT_LE(file->bytes - before, 2 * ViewBlockCache::kComputedBlockSize);  // the one or two blocks it lies in
    }
}

TEST(ViewBlockCache, ASequentialReaderComputesEachByteOnceInRuns) {
    auto file = std::make_shared<CountingFile>(16 * kMiB + 12345);
    ViewBlockCache cache(32 * kMiB);
    Readahead ra;
    std::vector<uint8_t> out(128 << 10);
    uint64_t requests = 0, computing = 0;
    for (uint64_t offset = 0; offset < file->size(); offset += out.size(), ++requests) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), file->size() - offset));
        std::span<uint8_t> part(out.data(), n);
        const uint64_t before = file->bytes;
        cache.read(file, offset, part, ra.after(offset, n));
        expect_bytes(part, offset);
        if (file->bytes != before) ++computing;
    }
    cache.wait_for_ahead();
    EXPECT_EQ(file->bytes, file->size());  // every byte computed once
    EXPECT_LT(file->calls, requests);      // in runs serving several requests each
}

TEST(ViewBlockCache, AReaderGoingForwardFindsItsNextBytesComputedAhead) {
    auto file = std::make_shared<CountingFile>(8 * kMiB);
    ViewBlockCache cache(32 * kMiB);
    std::vector<uint8_t> out(128 << 10);
    cache.read(file, 0, out, kMiB);
    cache.wait_for_ahead();
    EXPECT_EQ(file->bytes, out.size() + kMiB);  // the request, then the readahead on the pool
    const uint64_t calls = file->calls;
    for (uint64_t offset = out.size(); offset < out.size() + kMiB; offset += out.size()) {
        cache.read(file, offset, out, 0);
        expect_bytes(out, offset);
    }
    EXPECT_EQ(file->calls, calls);  // all of it found computed
    cache.read(file, 7 * kMiB, out, kMiB);  // near the end: the readahead stops at the file's end
    cache.wait_for_ahead();
    EXPECT_EQ(file->bytes, out.size() + kMiB + kMiB);
}

// A computed file that fails (as a corrupt chunk does) from `bad` on.
class FailingFile final : public VirtualFile {
public:
    FailingFile(uint64_t size, uint64_t bad) : size_(size), bad_(bad) {}
    uint64_t size() const override { return size_; }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        if (offset + out.size() > bad_) throw SourceError("part.nc", "a corrupt chunk");
        for (size_t i = 0; i < out.size(); ++i) out[i] = byte_at(offset + i);
    }

private:
    uint64_t size_, bad_;
};

TEST(ViewBlockCache, ARunComputedAheadThatFailsLeavesTheRequestToDecide) {
    auto file = std::make_shared<FailingFile>(8 * kMiB, 640 << 10);
    ViewBlockCache cache(32 * kMiB);
    std::vector<uint8_t> out(128 << 10);
    cache.read(file, 0, out, kMiB);  // the run ahead, [128K, 1152K), fails at 640K
    cache.wait_for_ahead();
    cache.read(file, out.size(), out, 0);  // bytes before the failure: computed now, right
    expect_bytes(out, out.size());
    EXPECT_THROW(cache.read(file, 640 << 10, out, 0), SourceError);  // the failing bytes: the error, never zeros
    EXPECT_THROW(cache.read(file, 576 << 10, out, 0), SourceError);
}

// A computed file that records the ranges planned (pieces) and computed
// (read); read by one thread at a time (no readahead: no pool thread).
class PlanningFile final : public VirtualFile {
public:
    explicit PlanningFile(uint64_t size) : size_(size) {}
    uint64_t size() const override { return size_; }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        for (size_t i = 0; i < out.size(); ++i) out[i] = byte_at(offset + i);
        computed.emplace_back(offset, out.size());
    }
    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        planned.emplace_back(offset, length);
        return VirtualFile::pieces(offset, length);
    }
    mutable std::vector<std::pair<uint64_t, uint64_t>> planned, computed;  // (offset, length)

private:
    uint64_t size_;
};

TEST(ViewBlockCache, AMissPlansOnlyTheBytesItsReaderDidNotRealize) {
    const uint64_t block = ViewBlockCache::kComputedBlockSize;
    auto file = std::make_shared<PlanningFile>(4 * kMiB);
    ViewBlockCache cache(32 * kMiB);
    std::vector<uint8_t> out(100000);
    const uint64_t offset = block + 4464;  // inside block 1; the request ends inside block 2
    const uint64_t end = offset + out.size();
    cache.read(file, offset, out, 0, {}, /*realized_computed=*/true);
    expect_bytes(out, offset);
    // The run of blocks 1 and 2: the request's bytes computed as they are, in one call,
    // and only the bytes of the run around them planned (and realized).
    const std::vector<std::pair<uint64_t, uint64_t>> planned{{block, offset - block}, {end, 3 * block - end}};
    EXPECT_EQ(file->planned, planned);
    EXPECT_NE(std::find(file->computed.begin(), file->computed.end(), std::pair{offset, uint64_t{out.size()}}),
              file->computed.end());
    // A reader that realized nothing has the whole run planned.
    file->planned.clear();
    cache.read(file, 8 * block + 10, out, 0);
    EXPECT_EQ(file->planned, (std::vector<std::pair<uint64_t, uint64_t>>{{8 * block, 2 * block}}));
}

TEST(ViewBlockCache, ConcurrentReadersGetTheirBytes) {
    auto file = std::make_shared<CountingFile>(8 * kMiB);
    ViewBlockCache cache(2 * kMiB);  // smaller than the file: blocks are dropped while others read
    std::vector<std::thread> readers;
    std::atomic<bool> ok{true};
    for (unsigned r = 0; r < 6; ++r)
        readers.emplace_back([&, r] {
            std::mt19937_64 rng(r);
            Readahead ra;
            std::vector<uint8_t> out(100000);
            for (int i = 0; i < 60; ++i) {
                const uint64_t offset = r % 2 ? rng() % (file->size() - out.size()) : (i * out.size()) % (file->size() - out.size());
                cache.read(file, offset, out, ra.after(offset, out.size()));
                for (size_t k = 0; k < out.size(); ++k)
                    if (out[k] != byte_at(offset + k)) ok = false;
            }
        });
    for (auto& t : readers) t.join();
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace ncafs::fs
