// Reads touch only the chunks they need: constant and NoValue chunks come
// from the hash (their entries may point anywhere), a box inside one chunk
// reads that chunk alone, and never-written chunks read as noValue. The
// fixture is patched (independent walker, tests/vds/vds_test_support.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "tests/vds/vds_test_support.hpp"

namespace {
const char* kSmallest = "r32_zip_const_novalue.vds";
}  // namespace

namespace {

using namespace vds_test;

// Index entries of LOD0 of the smallest fixture: 18 chunks (3x2x2... as the
// README: data 12, constant 5, novalue 1), 24 bytes each.
struct Lod0 {
    std::vector<uint8_t> bytes;
    uint64_t page;
    uint64_t hash(int c) const { return get<uint64_t>(bytes, page + static_cast<uint64_t>(c) * 24 + 16); }
    void set_object(int c, int64_t offset, int32_t length) {
        put<int64_t>(bytes, page + static_cast<uint64_t>(c) * 24, offset);
        put<int32_t>(bytes, page + static_cast<uint64_t>(c) * 24 + 8, length);
    }
};

Lod0 lod0_of_smallest() {
    Lod0 l{read_bytes(fixture(kSmallest)), 0};
    const auto rows = walk(l.bytes);
    l.page = row(rows, "Dimensions_012LOD0").first_page;
    return l;
}

std::string lod0_sha1(const std::string& path) {
    const auto ds = ncafs::vds::open_vds_dataset(path);
    const auto raw = read_all(*ds.find_variable("Amplitude"));
    return sha1_hex(raw.data(), raw.size());
}

// Constant and NoValue chunks are answered from the hash: pointing their
// entries at bytes past the end of the file changes nothing.
TEST(VdsLazyReads, ConstantAndNoValueChunksAreNeverRead) {
    Lod0 l = lod0_of_smallest();
    int patched = 0;
    for (int c = 0; c < 18; ++c) {
        const uint64_t h = l.hash(c);
        if (h == ~uint64_t{0} || (h >> 32) == 0x01010101u) {
            l.set_object(c, static_cast<int64_t>(l.bytes.size()) + 1000, 0x7fffffff);
            ++patched;
        }
    }
    EXPECT_EQ(patched, 6);  // README: constant 5, novalue 1
    const std::string path = write_temp(l.bytes);
    EXPECT_EQ(lod0_sha1(path), "b1093d046684e4f9348078980613cc3dd2aa1c46");
    ::unlink(path.c_str());
}

// A box inside chunk 0's valid part reads only chunk 0: every other chunk
// may be garbage. Reading the whole array then fails naming a chunk.
TEST(VdsLazyReads, ABoxReadsOnlyTheChunksItMeets) {
    Lod0 l = lod0_of_smallest();
    const auto whole = read_all(*ncafs::vds::open_vds_dataset(fixture(kSmallest)).find_variable("Amplitude"));
    for (int c = 1; c < 18; ++c) l.set_object(c, 0, 24);  // the file header as a "descriptor"
    const std::string path = write_temp(l.bytes);
    const auto ds = ncafs::vds::open_vds_dataset(path);
    const auto* v = ds.find_variable("Amplitude");
    const std::vector<uint64_t> start{0, 0, 0}, count{20, 20, 28};  // valid part of chunk 0: [0,28)^3
    std::vector<float> box(20 * 20 * 28);
    v->source->read(start, count, ncafs::ByteOrder::Native, box.data());
    for (uint64_t i = 0; i < 20; ++i)
        for (uint64_t j = 0; j < 20; ++j)
            for (uint64_t k = 0; k < 28; ++k) {
                float w;
                std::memcpy(&w, whole.data() + ((i * 60 + j) * 70 + k) * 4, 4);
                ASSERT_EQ(box[(i * 20 + j) * 28 + k], w);
            }
    EXPECT_THROW(read_all(*v), ncafs::FormatError);
    ::unlink(path.c_str());
}

// Hash 0 = never written: the chunk reads as the channel's noValue.
TEST(VdsLazyReads, UnwrittenChunkReadsAsNoValue) {
    Lod0 l = lod0_of_smallest();
    ASSERT_EQ(l.hash(0) >> 32 != 0x01010101u && l.hash(0) != ~uint64_t{0}, true);
    put<uint64_t>(l.bytes, l.page + 16, 0);  // chunk 0's hash
    l.set_object(0, 0, 0);
    const std::string path = write_temp(l.bytes);
    const auto ds = ncafs::vds::open_vds_dataset(path);
    float corner[8];
    const std::vector<uint64_t> start{0, 0, 0}, count{2, 2, 2};
    ds.find_variable("Amplitude")->source->read(start, count, ncafs::ByteOrder::Native, corner);
    for (float f : corner) EXPECT_EQ(f, -999.25f);
    ::unlink(path.c_str());
}

}  // namespace
