// Every LOD of every OpenVDS-written fixture read through our reader must
// reproduce the sha1s of tests/data/vds/README.md (computed by OpenVDS and
// an independent decoder), raw and dequantised as the README defines them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/open_dataset.hpp"
#include "codecs/vds/vds_chunk_cache.hpp"
#include "codecs/vds/vds_geometry.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "tests/vds/vds_test_support.hpp"

namespace {

using namespace vds_test;

struct Lod {
    std::vector<uint64_t> shape;
    std::string raw_sha1, f64_sha1;
    uint64_t novalue_samples;
};

struct Fixture {
    std::string file;
    ncafs::NcType type;
    bool use_no_value;
    double no_value;  // the stored value (U8/U16: the code)
    float scale, offset;
    std::vector<Lod> lods;
};

// From tests/data/vds/README.md.
const std::vector<Fixture> kFixtures = {
    {"r32_zip_const_novalue.vds", ncafs::NcType::Float, true, -999.25, 1, 0,
     {{{50, 60, 70}, "b1093d046684e4f9348078980613cc3dd2aa1c46", "d7d013d8d93b5be57f2a88239d0081745be3d1d6", 8448},
      {{25, 30, 35}, "060ce86a41a77b9f87675d5c287ee583bc39ac7b", "6ae25b0f6006e43a59ea65e8b5fd0aa6996a22bf", 1056},
      {{13, 15, 18}, "b3d49f0be5a192235f4e1e9d0ec694791a6200c9", "9e935d34ec3a4c9f4b40184c08dac411e8e71246", 144}}},
    {"u16_rle_quantized.vds", ncafs::NcType::UShort, false, 0, 0.01f, -50.0f,
     {{{40, 48, 64}, "c011b7ff833b3777c28882a675d209a72d43a20c", "38961f196aa24bd45cb49a86161d84fadb56fdff", 0},
      {{20, 24, 32}, "e71e67a0a9c275419d02c1b0732a0ade8f3ce68c", "88c1a389d68f16df31b7a57e46710ca750237682", 0},
      {{10, 12, 16}, "ea09237d953758b9cb4bf67a3eb08eba189703ad", "a99682f9f2fafed10356176b048ff425dc679a73", 0}}},
    {"r64_2d_none.vds", ncafs::NcType::Double, false, 0, 1, 0,
     {{{150, 200}, "bd82f2f71f36e2a2e85cf802a1635ed2a6e0eb48", "bd82f2f71f36e2a2e85cf802a1635ed2a6e0eb48", 0},
      {{75, 100}, "a5867bb062a3bea191870003d0667b2b6246b4be", "a5867bb062a3bea191870003d0667b2b6246b4be", 0},
      {{38, 50}, "08143c6cddef8fcf343aff66ed4be3fb676da521", "08143c6cddef8fcf343aff66ed4be3fb676da521", 0}}},
    {"r32_zip_brick64_margin0.vds", ncafs::NcType::Float, true, -1, 1, 0,
     {{{40, 70, 130}, "a9f5ab4294069b942e5657d4e27e25ea4fbff71b", "ac6385d559cb9395c579542976bdad4ee8d52745", 0},
      {{20, 35, 65}, "0432a70710de1704e19e408db51234ac6f1fdc93", "02b9a85bade34eb8bebdbca36cd6d916ab371976", 0}}},
};

// The README's f64 array: dequantised in float32 arithmetic, NoValue -> NaN.
std::vector<double> f64_of(const Fixture& f, const std::vector<uint8_t>& raw, uint64_t& novalue) {
    const size_t n = raw.size() / ncafs::type_size(f.type);
    std::vector<double> out(n);
    novalue = 0;
    for (size_t i = 0; i < n; ++i) {
        double stored = ncafs::element_as_double(f.type, raw.data(), i);
        double v = stored;
        if (f.type == ncafs::NcType::UShort || f.type == ncafs::NcType::UByte)
            v = static_cast<double>(f.offset + f.scale * static_cast<float>(stored));
        if (f.use_no_value && stored == f.no_value) {
            const uint64_t nan_bits = 0x7ff8000000000000ull;
            std::memcpy(&v, &nan_bits, 8);
            ++novalue;
        }
        out[i] = v;
    }
    return out;
}

std::string variable_name(int lod) { return lod == 0 ? "Amplitude" : "Amplitude_lod" + std::to_string(lod); }

TEST(VdsFixtures, EveryLodMatchesTheReadmeSha1s) {
    for (const auto& f : kFixtures) {
        SCOPED_TRACE(f.file);
        const ncafs::Dataset ds = ncafs::open_dataset(fixture(f.file));  // by magic, as the mount does
        for (size_t lod = 0; lod < f.lods.size(); ++lod) {
            SCOPED_TRACE("LOD " + std::to_string(lod));
            const ncafs::Variable* v = ds.find_variable(variable_name(static_cast<int>(lod)));
            ASSERT_NE(v, nullptr);
            EXPECT_EQ(v->type, f.type);
            EXPECT_EQ(ds.shape(*v), f.lods[lod].shape);
            const auto raw = read_all(*v);
            EXPECT_EQ(sha1_hex(raw.data(), raw.size()), f.lods[lod].raw_sha1);
            uint64_t novalue = 0;
            const auto f64 = f64_of(f, raw, novalue);
            EXPECT_EQ(sha1_hex(f64.data(), f64.size() * 8), f.lods[lod].f64_sha1);
            EXPECT_EQ(novalue, f.lods[lod].novalue_samples);
        }
        EXPECT_EQ(ds.find_variable(variable_name(static_cast<int>(f.lods.size()))), nullptr);
    }
}

TEST(VdsFixtures, AttributesCarryTheChannelDescriptor) {
    const auto u16 = ncafs::vds::open_vds_dataset(fixture("u16_rle_quantized.vds"));
    const auto* v = u16.find_variable("Amplitude");
    ASSERT_NE(v, nullptr);
    ASSERT_NE(v->find_attribute("scale_factor"), nullptr);
    EXPECT_EQ(v->find_attribute("scale_factor")->type, ncafs::NcType::Float);
    EXPECT_EQ(static_cast<float>(v->find_attribute("scale_factor")->as_double()), 0.01f);
    EXPECT_EQ(v->find_attribute("add_offset")->as_double(), -50.0);
    EXPECT_EQ(v->find_attribute("units")->as_text(), "K");
    EXPECT_EQ(v->find_attribute("_FillValue"), nullptr);  // useNoValue false

    const auto r32 = ncafs::vds::open_vds_dataset(fixture("r32_zip_const_novalue.vds"));
    const auto* a = r32.find_variable("Amplitude");
    ASSERT_NE(a, nullptr);
    ASSERT_NE(a->find_attribute("_FillValue"), nullptr);
    EXPECT_EQ(a->find_attribute("_FillValue")->type, ncafs::NcType::Float);
    EXPECT_EQ(a->find_attribute("_FillValue")->as_double(), -999.25);
    EXPECT_EQ(a->find_attribute("scale_factor"), nullptr);
}

// Dimensions are the axes reversed; coordinates are min + i*(max-min)/(n-1),
// decimated at LOD n (README: Sample 0..276 over 70 samples, Inline 500..549).
TEST(VdsFixtures, DimensionsAndCoordinates) {
    const auto ds = ncafs::vds::open_vds_dataset(fixture("r32_zip_const_novalue.vds"));
    const auto* v = ds.find_variable("Amplitude_lod1");
    ASSERT_NE(v, nullptr);
    ASSERT_EQ(v->dimids.size(), 3u);
    EXPECT_EQ(ds.dimensions[v->dimids[0]].name, "Inline_lod1");
    EXPECT_EQ(ds.dimensions[v->dimids[2]].name, "Sample_lod1");
    const auto* sample = ds.find_variable("Sample");
    ASSERT_NE(sample, nullptr);
    EXPECT_EQ(sample->find_attribute("units")->as_text(), "ms");
    const auto s0 = read_all(*sample);
    const auto* sample1 = ds.find_variable("Sample_lod1");
    ASSERT_NE(sample1, nullptr);
    const auto s1 = read_all(*sample1);
    ASSERT_EQ(s0.size(), 70u * 8);
    ASSERT_EQ(s1.size(), 35u * 8);
    for (size_t m = 0; m < 35; ++m) EXPECT_EQ(ncafs::element_as_double(ncafs::NcType::Double, s1.data(), m), 276.0 * (2 * m) / 69);
    const auto inl = read_all(*ds.find_variable("Inline_lod2"));
    EXPECT_EQ(ncafs::element_as_double(ncafs::NcType::Double, inl.data(), 12), 548.0);  // LOD0 sample 48
}

// A box read equals the same box cut out of the whole array (chunk borders,
// margins, big-endian order).
TEST(VdsFixtures, BoxReadsAgreeWithWholeReads) {
    const auto ds = ncafs::vds::open_vds_dataset(fixture("r32_zip_const_novalue.vds"));
    const auto* v = ds.find_variable("Amplitude");
    const auto whole = read_all(*v);
    const std::vector<uint64_t> start{20, 23, 27}, count{13, 9, 30};
    std::vector<float> box(13 * 9 * 30);
    v->source->read(start, count, ncafs::ByteOrder::Big, box.data());
    ncafs::swap_from_big_endian(ncafs::NcType::Float, box.data(), box.size());
    size_t k = 0;
    for (uint64_t i = 0; i < 13; ++i)
        for (uint64_t j = 0; j < 9; ++j)
            for (uint64_t l = 0; l < 30; ++l, ++k) {
                const size_t at = ((start[0] + i) * 60 + start[1] + j) * 70 + start[2] + l;
                float w;
                std::memcpy(&w, whole.data() + at * 4, 4);
                ASSERT_EQ(box[k], w) << i << "," << j << "," << l;
            }
}

// ArraySources are shared by the FUSE threads: concurrent whole reads of
// every LOD (through the shared chunk cache) all give the README's sha1s.
TEST(VdsFixtures, ConcurrentReadsAgree) {
    const auto& f = kFixtures[0];
    const ncafs::Dataset ds = ncafs::vds::open_vds_dataset(fixture(f.file));
    std::vector<std::string> got(8);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t)
        threads.emplace_back([&, t] {
            const int lod = static_cast<int>(t % f.lods.size());
            const auto raw = read_all(*ds.find_variable(variable_name(lod)));
            got[t] = sha1_hex(raw.data(), raw.size());
        });
    for (auto& th : threads) th.join();
    for (size_t t = 0; t < got.size(); ++t) EXPECT_EQ(got[t], f.lods[t % f.lods.size()].raw_sha1) << t;
}

// The decoded-chunk cache stays within its budget (here 300 KB, below the
// ~2.2 MB of decoded LOD0 chunks of the first fixture) and evicting does
// not change any value.
TEST(VdsFixtures, ChunkCacheStaysWithinItsBudget) {
    ncafs::vds::set_chunk_cache_budget(300'000);
    for (const auto& f : kFixtures) {
        const ncafs::Dataset ds = ncafs::vds::open_vds_dataset(fixture(f.file));
        for (size_t lod = 0; lod < f.lods.size(); ++lod) {
            const auto raw = read_all(*ds.find_variable(variable_name(static_cast<int>(lod))));
            EXPECT_EQ(sha1_hex(raw.data(), raw.size()), f.lods[lod].raw_sha1);
            EXPECT_LE(ncafs::vds::chunk_cache_bytes(), 300'000u);
        }
    }
    EXPECT_GT(ncafs::vds::chunk_cache_bytes(), 0u);
    ncafs::vds::set_chunk_cache_budget(ncafs::vds::kDefaultChunkCacheBytes);
}

// A 4-D volume in group 012 (Sample 40, Crossline 36, Inline 30, Offset 5;
// bricks of 64): 5 chunks at every LOD, one per Offset sample, each storing
// its own slice; read as OpenVDS reads LOD n: every dim decimated, Offset too
// ([3, 15, 18, 20] and [2, 8, 9, 10]), a forced full-resolution dim not.
TEST(VdsGeometry, FourDimensionalLodsDecimateEveryDimension) {
    ncafs::vds::Layout l;
    for (int64_t n : {40, 36, 30, 5}) l.axes.push_back({"d", "", n, 0, 0});
    const std::vector<std::vector<int64_t>> read{{40, 36, 30, 5}, {20, 18, 15, 3}, {10, 9, 8, 2}};
    for (int lod = 0; lod <= 2; ++lod) {
        const auto g = ncafs::vds::make_geometry(l, {0, 1, 2}, lod);
        EXPECT_EQ(g.chunk_count, 5u) << lod;
        for (int d = 0; d < 4; ++d) EXPECT_EQ(g.view_samples(d), read[static_cast<size_t>(lod)][static_cast<size_t>(d)]) << lod << d;
        EXPECT_EQ(g.lod_samples(3), 5) << "chunks keep one Offset sample each";
        // Offset chunk i holds a sample read at LOD n only when i is a multiple of 2^n.
        for (int64_t i = 0; i < 5; ++i) {
            const bool read_here = i % (int64_t{1} << lod) == 0;
            EXPECT_EQ(g.valid_end(3, i) - g.valid_first(3, i), read_here ? 1 : 0) << lod << " chunk " << i;
            if (read_here) EXPECT_EQ(g.valid_first(3, i), i >> lod);
        }
    }
    l.full_resolution_dimension = 3;
    EXPECT_EQ(ncafs::vds::make_geometry(l, {0, 1, 2}, 2).view_samples(3), 5);
    EXPECT_EQ(ncafs::vds::make_geometry(l, {0, 1, 2}, 2).view_samples(0), 10);
}

}  // namespace
