// Batches of .vds chunks (codecs/vds/vds_writer_batch.hpp): for budgets from
// one chunk to the whole layer, wide and narrow, batches tile each layer (every chunk of a
// batch names that batch), and every chunk object made in a batch equals
// the one computed here sample by sample from the formula of the source
// values (descriptor, decimation at LOD n, conversion to U16 codes with the
// fill as NoValue), for edge chunks of a shape no multiple of the brick;
// with the source read in native and in big-endian order (swapped as the
// chunks are copied out).
#include <gtest/gtest.h>

#include <cstring>

#include "codecs/memory_source.hpp"
#include "codecs/vds/vds_writer_batch.hpp"

using namespace ncafs;
using namespace ncafs::vds;

namespace {

constexpr uint64_t kT = 140, kY = 70, kX = 200;  // netCDF order; VDS dims 0, 1, 2 = x, y, t
constexpr int16_t kFill = -32767;

// The source value at (t, y, x), as a double; every 97th element is the fill.
double value(uint64_t t, uint64_t y, uint64_t x) {
    const uint64_t i = (t * kY + y) * kX + x;
    if (i % 97 == 0) return kFill;
    return static_cast<double>(static_cast<int64_t>(i % 60000) - 30000);
}

std::shared_ptr<const ArraySource> source(NcType type) {
    std::vector<uint8_t> bytes(kT * kY * kX * type_size(type));
    for (uint64_t t = 0; t < kT; ++t)
        for (uint64_t y = 0; y < kY; ++y)
            for (uint64_t x = 0; x < kX; ++x) {
                const uint64_t i = (t * kY + y) * kX + x;
                if (type == NcType::Float) {
                    const float f = static_cast<float>(value(t, y, x));
                    std::memcpy(bytes.data() + 4 * i, &f, 4);
                } else {
                    const int16_t s = static_cast<int16_t>(value(t, y, x));
                    std::memcpy(bytes.data() + 2 * i, &s, 2);
                }
            }
    return std::make_shared<MemorySource>(type, std::vector<uint64_t>{kT, kY, kX}, std::move(bytes));
}

Layout layout() {
    Layout l;
    l.lod_levels = 2;
    for (uint64_t n : {kX, kY, kT}) l.axes.push_back({"d", "", static_cast<int64_t>(n), 0, 0});
    return l;
}

// The object of `chunk` computed sample by sample.
std::vector<uint8_t> expected_object(const Channel& c, const LayerGeometry& g, uint64_t chunk) {
    const ChunkBox box = chunk_box(g, chunk);
    std::vector<uint8_t> out(chunk_object_size(c.format, box));
    const int32_t descriptor[6] = {3, int32_t(box.stored[0]), int32_t(box.stored[1]), int32_t(box.stored[2]),
                                   int32_t(c.format), 1};
    std::memcpy(out.data(), descriptor, 24);
    size_t i = 0;
    const int64_t step = int64_t{1} << g.lod;
    for (int64_t t = 0; t < box.stored[2]; ++t)
        for (int64_t y = 0; y < box.stored[1]; ++y)
            for (int64_t x = 0; x < box.stored[0]; ++x, ++i) {
                const double v = value(box.lo[2] + t * step, box.lo[1] + y * step, box.lo[0] + x * step);
                if (c.format == Format::R32) {
                    const float f = static_cast<float>(v);
                    std::memcpy(out.data() + 24 + 4 * i, &f, 4);
                } else {
                    const uint16_t code = v == kFill ? 0xFFFF : static_cast<uint16_t>(v + 32768);
                    std::memcpy(out.data() + 24 + 2 * i, &code, 2);
                }
            }
    return out;
}

void check_layer(const Channel& c, const WriterChannel& w, const LayerGeometry& g, uint64_t budget,
                 LodStore* store = nullptr, bool narrow = false, ByteOrder order = ByteOrder::Native) {
    std::vector<bool> seen(g.chunk_count, false);
    for (uint64_t chunk = 0; chunk < g.chunk_count; ++chunk) {
        if (seen[chunk]) continue;
        const ChunkRange r = batch_of(g, chunk, batch_sample_bytes(c, w), budget, narrow);
        ASSERT_TRUE(r.first <= chunk && chunk < r.end && r.end <= g.chunk_count) << "chunk " << chunk;
        std::vector<std::vector<uint8_t>> made(r.end - r.first);
        for (uint64_t k = r.first; k < r.end; ++k) {
            const ChunkRange again = batch_of(g, k, batch_sample_bytes(c, w), budget, narrow);
            ASSERT_TRUE(again.first == r.first && again.end == r.end) << "chunk " << k << " of batch at " << r.first;
            made[k - r.first].resize(chunk_object_size(c.format, chunk_box(g, k)));
            seen[k] = true;
        }
        fill_batch(c, w, g, r, [&](uint64_t k) { return made[k - r.first].data(); }, store, order);
        for (uint64_t k = r.first; k < r.end; ++k)
            ASSERT_EQ(made[k - r.first], expected_object(c, g, k))
                << "LOD" << g.lod << " chunk " << k << " budget " << budget << " big-endian " << (order == ByteOrder::Big);
    }
}

void check_all(NcType type, Format format, float offset) {
    Layout l = layout();
    Channel c;
    c.format = format;
    c.offset = offset;
    WriterChannel w{0, source(type), type, std::nullopt};
    if (format == Format::U16) {
        c.use_no_value = true;
        w.fill = std::vector<uint8_t>(2);
        std::memcpy(w.fill->data(), &kFill, 2);
    }
    // One chunk; groups of 3 chunks along x (4 = 3 + 1); groups of 2 x-y slabs along t; the whole layer.
    for (uint64_t budget : {uint64_t{1}, uint64_t{3} << 20, uint64_t{8} << 20, uint64_t{1} << 40})
        for (int lod = 0; lod <= l.lod_levels; ++lod)
            for (bool narrow : {false, true})
                for (ByteOrder order : {ByteOrder::Native, ByteOrder::Big})
                    check_layer(c, w, make_geometry(l, {0, 1, 2}, lod), budget, nullptr, narrow, order);
}

void check_lods_from_store(ByteOrder order) {
    const Layout l = layout();
    Channel c;
    const WriterChannel w{0, source(NcType::Float), NcType::Float, std::nullopt};
    std::vector<LayerGeometry> layers;
    for (int lod = 0; lod <= l.lod_levels; ++lod) layers.push_back(make_geometry(l, {0, 1, 2}, lod));
    auto store = LodStore::make(layers, 4);
    ASSERT_TRUE(store);
    std::vector<uint8_t> scratch(uint64_t{64} * 64 * 64 * 4);
    EXPECT_FALSE(store->take(1, chunk_box(layers[1], 0), scratch.data()));  // nothing kept yet
    check_layer(c, w, layers[0], uint64_t{3} << 20, store.get(), false, order);
    for (int lod = 1; lod <= l.lod_levels; ++lod) {
        for (uint64_t k = 0; k < layers[lod].chunk_count; ++k)
            EXPECT_TRUE(store->take(lod, chunk_box(layers[lod], k), scratch.data())) << "LOD" << lod << " chunk " << k;
        // A source that fails every read: the chunks must come from the store.
        const WriterChannel broken{0, std::make_shared<MemorySource>(NcType::Float, std::vector<uint64_t>{1, 1, 1},
                                                                     std::vector<uint8_t>(4)),
                                   NcType::Float, std::nullopt};
        check_layer(c, broken, layers[lod], uint64_t{8} << 20, store.get(), false, order);
    }
}

// LODs 1 and 2 made from the samples LOD0 batches kept (LodStore), not from
// the source; kept in the order read (big-endian: swapped when copied out).
TEST(VdsBatch, LodChunksFromTheLod0SamplesKept) {
    check_lods_from_store(ByteOrder::Native);
    check_lods_from_store(ByteOrder::Big);
}

TEST(VdsBatch, FloatChunksOfEveryBatchEqualTheSourceDecimated) { check_all(NcType::Float, Format::R32, 0); }

TEST(VdsBatch, ShortChunksAreU16CodesWithTheFillAsNoValue) { check_all(NcType::Short, Format::U16, -32768); }

}  // namespace
