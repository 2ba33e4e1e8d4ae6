// Unit tests of aggregation/zarr_view: the chunk grid rule, chunk keys both
// ways (hostile keys refused), names no folder may have left out, members
// and listings computed without enumerating chunks (a grid of 2^40 chunks),
// and chunk bytes (values, padding with the fill value, byte order);
// stored chunks passed through (absent where never written, sizes from the
// chunk index, bytes the file's) and chunks a source declares fill-only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "aggregation/zarr_view/zarr_member_files.hpp"
#include "aggregation/zarr_view/zarr_store_layout.hpp"
#include "codecs/deflated_chunks.hpp"
#include "codecs/memory_source.hpp"
#include "codecs/open_dataset.hpp"
#include "codecs/realize_pieces.hpp"

namespace {

using namespace ncafs;
using namespace ncafs::agg::zarr_view;

TEST(ZarrGrid, InnerDimensionsWholeRecordsOneByOne) {
    auto g = choose_zarr_grid({10, 3, 4}, 4, false, false);
    EXPECT_EQ(g.chunk, (std::vector<uint64_t>{10, 3, 4}));
    g = choose_zarr_grid({10, 3, 4}, 4, true, false);
    EXPECT_EQ(g.chunk, (std::vector<uint64_t>{1, 3, 4}));
    EXPECT_EQ(g.chunk_count, 10u);
    g = choose_zarr_grid({5}, 8, true, true);  // a small record coordinate: whole
    EXPECT_EQ(g.chunk, (std::vector<uint64_t>{5}));
    g = choose_zarr_grid({}, 8, false, false);
    EXPECT_EQ(g.chunk_count, 1u);
    EXPECT_EQ(g.key_of(0), "0");
}

TEST(ZarrGrid, NoChunkBeyondTheBound) {
    // 4096 x 8192 x 8192 float: a row of 256 MiB is cut along its first dimension.
    auto g = choose_zarr_grid({4096, 8192, 8192}, 4, false, false);
    EXPECT_LE(g.chunk_bytes(), kMaxZarrChunkBytes);
    EXPECT_EQ(g.chunk, (std::vector<uint64_t>{1, 2048, 8192}));
    // 2^20 x 2^20 x 2^20 doubles: 2^37 chunks, counted, never listed.
    g = choose_zarr_grid({1u << 20, 1u << 20, 1u << 20}, 8, false, false);
    EXPECT_LE(g.chunk_bytes(), kMaxZarrChunkBytes);
    EXPECT_EQ(g.chunk_count, uint64_t{1} << 37);
}

TEST(ZarrGrid, RunsAreTheChunksValuesInCOrder) {
    auto g = choose_zarr_grid({7, 3}, 4, false, false);  // one chunk of the whole array
    auto r = g.run_of(0);
    EXPECT_EQ(r.first, 0u);
    EXPECT_EQ(r.count, 21u);
    g = choose_zarr_grid({5, 3, 4}, 4, true, false);
    r = g.run_of(3);
    EXPECT_EQ(r.first, 36u);
    EXPECT_EQ(r.count, 12u);
}

TEST(ZarrGrid, KeysBothWaysAndHostileKeysRefused) {
    auto g = choose_zarr_grid({5, 3, 4}, 4, true, false);
    for (uint64_t i = 0; i < g.chunk_count; ++i) EXPECT_EQ(g.index_of(g.key_of(i)), static_cast<int64_t>(i));
    for (const char* bad : {"", ".", "..", "5.0.0", "0.0", "0.0.0.0", "00.0.0", "0.0.1", "-1.0.0", "0/0/0", "0..0",
                            "0.0.0 ", "1e0.0.0", "99999999999999999999999.0.0", "0.0.0/../..", "/"})
        EXPECT_EQ(g.index_of(bad), -1) << bad;
}

std::shared_ptr<Dataset> dataset_named(std::vector<std::string> names) {
    auto ds = std::make_shared<Dataset>();
    ds->origin = "test";
    ds->dimensions.push_back({"x", 5, false});
    for (const auto& name : names) {
        Variable v;
        v.name = name;
        v.type = NcType::Short;
        v.dimids = {0};
        std::vector<uint8_t> values(10);
        for (int i = 0; i < 5; ++i) {
            int16_t e = static_cast<int16_t>(i + 1);
            std::memcpy(values.data() + 2 * i, &e, 2);
        }
        v.source = std::make_shared<MemorySource>(NcType::Short, std::vector<uint64_t>{5}, values);
        ds->variables.push_back(std::move(v));
    }
    return ds;
}

TEST(ZarrStoreLayout, NamesThatWouldEscapeOrCollideAreLeftOut) {
    ZarrStoreLayout layout(dataset_named({"..", ".", ".zgroup", "a/b", "", "ok", std::string(300, 'n')}), false);
    ASSERT_EQ(layout.arrays().size(), 1u);
    EXPECT_EQ(layout.arrays()[0].variable->name, "ok");
    EXPECT_EQ(layout.notes().size(), 6u);
    for (const char* bad : {"..", "../ok", "ok/..", "ok/../ok", "/ok", "ok/", "ok//0", "ok/0/0", ".zgroup/x", "nope"})
        EXPECT_FALSE(layout.member(bad)) << bad;
    EXPECT_TRUE(layout.member("ok/0"));
    EXPECT_TRUE(layout.member(".zmetadata"));
}

TEST(ZarrStoreLayout, ListingsAndMetadata) {
    ZarrStoreLayout layout(dataset_named({"v"}), false);
    auto root = *layout.member("");
    ASSERT_EQ(layout.listing_size(root), 4u);
    EXPECT_EQ(layout.listing_entry(root, 3), (std::pair<std::string, bool>{"v", true}));
    auto folder = *layout.member("v");
    ASSERT_EQ(layout.listing_size(folder), 3u);
    EXPECT_EQ(layout.listing_entry(folder, 2).first, "0");
    auto zarray = nlohmann::json::parse(*layout.member("v/.zarray")->text);
    EXPECT_EQ(zarray["dtype"], "<i2");
    EXPECT_EQ(zarray["chunks"], nlohmann::json::array({5}));
    auto zmeta = nlohmann::json::parse(*layout.member(".zmetadata")->text);
    EXPECT_EQ(zmeta["metadata"]["v/.zattrs"]["_ARRAY_DIMENSIONS"], nlohmann::json::array({"x"}));
}

TEST(ZarrStoreLayout, V3KeysBothWaysAndHostileKeysRefused) {
    auto ds = dataset_named({"v"});
    ds->dimensions[0].unlimited = true;  // five chunks v/c/0 .. v/c/4
    ZarrStoreLayout layout(ds, false, 3);
    auto root = *layout.member("");
    ASSERT_EQ(layout.listing_size(root), 2u);
    EXPECT_EQ(layout.listing_entry(root, 0).first, "zarr.json");
    auto folder = *layout.member("v");
    EXPECT_EQ(layout.listing_entry(folder, 1), (std::pair<std::string, bool>{"c", true}));
    auto chunks = *layout.member("v/c");
    ASSERT_TRUE(chunks.chunk_folder);
    ASSERT_EQ(layout.listing_size(chunks), 5u);
    for (uint64_t i = 0; i < 5; ++i) {
        auto name = layout.listing_entry(chunks, i);
        EXPECT_FALSE(name.second);
        auto m = layout.member("v/c/" + name.first);
        ASSERT_TRUE(m && m->kind == ZarrMember::Kind::Chunk);
        EXPECT_EQ(m->chunk, i);
    }
    for (const char* bad : {"v/c/5", "v/c/00", "v/c/0/", "v/c//0", "v/c/0/0", "v/c/-1", "v/cc", "v/c0", "v/c/", "v/.zarray",
                            ".zgroup", ".zmetadata", "v/c/../c/0", "v/c/1e0"})
        EXPECT_FALSE(layout.member(bad)) << bad;
    auto node = nlohmann::json::parse(*layout.member("v/zarr.json")->text);
    EXPECT_EQ(node["data_type"], "int16");
    EXPECT_EQ(node["dimension_names"], nlohmann::json::array({"x"}));
    EXPECT_EQ(node["codecs"][0]["configuration"]["endian"], "little");
}

TEST(ZarrChunkFile, ValuesThenFillInTheDeclaredOrder) {
    auto ds = dataset_named({"v"});
    ds->dimensions[0].unlimited = true;  // one record a chunk
    ds->variables[0].attributes.push_back(Attribute::numeric<int16_t>("_FillValue", NcType::Short, {-2}));
    auto layout = std::make_shared<const ZarrStoreLayout>(ds, true);
    auto file = zarr_member_file(layout, *layout->member("v/3"));
    ASSERT_EQ(file->size(), 2u);
    uint8_t bytes[2];
    file->read(0, bytes);
    EXPECT_EQ(bytes[0], 0);
    EXPECT_EQ(bytes[1], 4);  // element 3 is 4, big-endian
    EXPECT_THROW(file->read(1, std::span<uint8_t>(bytes, 2)), std::exception);
}

// A record of a classic file is one run of it: its chunk is that file's own
// bytes (an extent the read path splices), not computed.
TEST(ZarrChunkFile, ClassicRecordsAreTheFilesOwnBytes) {
    const auto dir = std::filesystem::temp_directory_path() / ("zarr_view_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto cdl = dir / "r.cdl", nc = dir / "r.nc";
    std::ofstream(cdl) << "netcdf r { dimensions: t = UNLIMITED ; x = 3 ; variables: float v(t, x) ; short s(t) ;\n"
                          "data: v = 1, 2, 3, 4, 5, 6 ; s = 7, 8 ; }\n";
    ASSERT_EQ(std::system(("ncgen -b -k classic -o " + nc.string() + " " + cdl.string()).c_str()), 0);
    auto ds = std::make_shared<const Dataset>(open_dataset(nc.string()));
    auto layout = std::make_shared<const ZarrStoreLayout>(ds, true);
    auto file = zarr_member_file(layout, *layout->member("v/1.0"));
    ASSERT_EQ(file->size(), 12u);
    auto pieces = realize_all(*file, 0, 12);
    ASSERT_EQ(pieces.size(), 1u);
    ASSERT_TRUE(pieces[0].extent.has_value());
    uint8_t bytes[12];
    pieces[0].extent->file->pread_exact(bytes, 12, pieces[0].extent->offset);
    const float want[3] = {4, 5, 6};
    for (int i = 0; i < 3; ++i) {
        uint32_t bits = (uint32_t{bytes[4 * i]} << 24) | (uint32_t{bytes[4 * i + 1]} << 16) |
                        (uint32_t{bytes[4 * i + 2]} << 8) | bytes[4 * i + 3];
        float value;
        std::memcpy(&value, &bits, 4);
        EXPECT_EQ(value, want[i]);
    }
    std::filesystem::remove_all(dir);
}

// A source whose chunks lie deflated in a file (chunk 1 never written) and
// whose element 3 on is declared fill-only.
class StoredSource final : public ArraySource, public DeflatedChunks {
public:
    explicit StoredSource(std::shared_ptr<const OpenFile> file) : file_(std::move(file)) {}
    NcType type() const override { return NcType::Short; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t>, std::span<const uint64_t> count, ByteOrder, void* out) const override {
        std::memset(out, 0, ncafs::element_count(count) * 2);
    }
    std::shared_ptr<const DeflatedChunks> deflated_chunks(std::string*) const override {
        return with_chunks_ ? std::shared_ptr<const DeflatedChunks>(std::shared_ptr<const void>(), this) : nullptr;
    }
    std::optional<std::vector<uint8_t>> uniform_value(std::span<const uint64_t> start,
                                                      std::span<const uint64_t>) const override {
        if (start[0] < 3) return std::nullopt;
        return std::vector<uint8_t>{0xfe, 0xff};  // -2, the _FillValue
    }
    const std::vector<uint64_t>& chunk_shape() const override { return chunk_; }
    uint64_t chunk_count() const override { return 3; }
    uint64_t shuffle_size() const override { return 2; }
    bool big_endian() const override { return false; }
    bool has_unwritten() const override { return true; }
    const std::vector<uint8_t>& fill() const override { return fill_; }
    const std::shared_ptr<const OpenFile>& file() const override { return file_; }
    std::optional<Place> place(uint64_t index) const override {
        if (index == 1) return std::nullopt;
        return Place{index * 4, 3};
    }
    bool with_chunks_ = true;

private:
    std::shared_ptr<const OpenFile> file_;
    std::vector<uint64_t> shape_{5}, chunk_{2};
    std::vector<uint8_t> fill_{0xfe, 0xff};
};

std::shared_ptr<Dataset> dataset_of(std::shared_ptr<const ArraySource> source) {
    auto ds = dataset_named({"v"});
    ds->variables[0].source = std::move(source);
    ds->variables[0].attributes.push_back(Attribute::numeric<int16_t>("_FillValue", NcType::Short, {-2}));
    return ds;
}

TEST(ZarrStoredChunks, PassedThroughAbsentWhereNeverWritten) {
    const auto path = std::filesystem::temp_directory_path() / ("zarr_stored_" + std::to_string(::getpid()));
    std::ofstream(path) << "abcdefghijkl";
    auto source = std::make_shared<StoredSource>(OpenFile::open(path.string()));
    auto layout = std::make_shared<const ZarrStoreLayout>(dataset_of(source), false);
    auto zarray = nlohmann::json::parse(*layout->member("v/.zarray")->text);
    EXPECT_EQ(zarray["chunks"], nlohmann::json::array({2}));
    EXPECT_EQ(zarray["compressor"]["id"], "zlib");
    EXPECT_EQ(zarray["filters"][0]["elementsize"], 2);
    EXPECT_EQ(zarray["dtype"], "<i2");
    EXPECT_FALSE(layout->member("v/1"));  // never written
    auto folder = *layout->member("v");
    ASSERT_EQ(layout->listing_size(folder), 5u);
    EXPECT_EQ(layout->listing_entry(folder, 2).first, "0");
    EXPECT_EQ(layout->listing_entry(folder, 3).first, "");  // not listed
    EXPECT_EQ(layout->listing_entry(folder, 4).first, "2");
    auto chunk = *layout->member("v/2");
    EXPECT_EQ(chunk.size(), 3u);  // the chunk index's, not the shape's
    auto file = zarr_member_file(layout, chunk);
    uint8_t bytes[3];
    file->read(0, bytes);
    EXPECT_EQ(std::string(bytes, bytes + 3), "ijk");
    auto pieces = file->pieces(1, 2);
    ASSERT_EQ(pieces.size(), 1u);
    ASSERT_TRUE(pieces[0].extent);
    EXPECT_EQ(pieces[0].extent->offset, 9u);
    EXPECT_THROW(file->read(1, std::span<uint8_t>(bytes, 3)), std::exception);
    std::filesystem::remove(path);
}

TEST(ZarrStoredChunks, ComputedChunksDeclaredFillOnlyAreAbsent) {
    auto source = std::make_shared<StoredSource>(nullptr);
    source->with_chunks_ = false;  // computed: the grid is the whole variable...
    auto ds = dataset_of(source);
    ds->dimensions[0].unlimited = true;  // ...one record a chunk
    for (int format : {2, 3}) {
        ZarrStoreLayout layout(ds, false, format);
        const std::string prefix = format == 2 ? "v/" : "v/c/";
        EXPECT_TRUE(layout.member(prefix + "2")) << format;
        EXPECT_FALSE(layout.member(prefix + "3")) << format;  // declared fill-only
        EXPECT_FALSE(layout.member(prefix + "4")) << format;
        auto folder = *layout.member(format == 2 ? "v" : "v/c");
        const uint64_t first = format == 2 ? 2 : 0;
        EXPECT_EQ(layout.listing_entry(folder, first + 2).first, "2") << format;
        EXPECT_EQ(layout.listing_entry(folder, first + 3).first, "") << format;
    }
}

}  // namespace
