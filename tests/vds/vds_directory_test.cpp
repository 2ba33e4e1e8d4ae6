// The object-store directory form (openvds-notes.md §2.9): each OpenVDS
// fixture container is rewritten here as VolumeDataLayout, LayerStatus,
// <layer>/<chunk> and <layer>/ChunkMetadata/<page> (by the independent walker
// of vds_test_support), and must read back with the README's sha1s.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "tests/vds/vds_test_support.hpp"

namespace {

using namespace vds_test;
namespace fsys = std::filesystem;

void write_file(const fsys::path& p, const void* data, size_t n) {
    fsys::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

// Rewrites a container as a directory; returns LayerStatus for tweaking.
nlohmann::json to_directory(const std::string& container, const fsys::path& dir, uint64_t page_size = 4) {
    const auto b = read_bytes(container);
    nlohmann::json status = nlohmann::json::array();
    for (const auto& r : walk(b)) {
        const auto chunks = static_cast<uint64_t>(get<int32_t>(b, r.header_at + 8));
        const auto entries = static_cast<uint64_t>(get<int32_t>(b, r.header_at + 16));
        auto entry_at = [&](uint64_t c) {
            const auto page = static_cast<uint64_t>(get<int64_t>(b, r.directory + 16 + static_cast<uint64_t>(r.file_metadata_length) + (c / entries) * 8));
            return page + (c % entries) * (16 + static_cast<uint64_t>(r.metadata_length));
        };
        if (r.name == "VolumeDataLayout") {
            const uint64_t e = entry_at(0);
            write_file(dir / r.name, &b[static_cast<size_t>(get<int64_t>(b, e))], static_cast<size_t>(get<int32_t>(b, e + 8)));
            continue;
        }
        std::vector<uint8_t> pages((chunks + page_size - 1) / page_size * page_size * 8, 0);
        for (uint64_t c = 0; c < chunks; ++c) {
            const uint64_t e = entry_at(c);
            std::memcpy(&pages[c * 8], &b[e + 16], 8);
            if (const auto len = get<int32_t>(b, e + 8))
                write_file(dir / r.name / std::to_string(c), &b[static_cast<size_t>(get<int64_t>(b, e))], static_cast<size_t>(len));
        }
        for (uint64_t p = 0; p * page_size < chunks; ++p)
            write_file(dir / r.name / "ChunkMetadata" / std::to_string(p), &pages[p * page_size * 8], page_size * 8);
        static const char* names[] = {"None", "Wavelet", "RLE", "Zip"};
        std::vector<int> directory;
        for (uint64_t p = 0; p * page_size < chunks; ++p) directory.push_back(static_cast<int>(p));
        status.push_back({{"layerName", r.name}, {"compressionMethod", names[get<int32_t>(b, r.directory + 16)]},
                          {"chunkCount", chunks}, {"chunkMetadataPageSize", page_size}, {"chunkMetadataByteSize", 8},
                          {"hasChunkMetadataPages", true}, {"pageDirectory", directory}, {"produceStatus", "Normal"}});
    }
    const std::string text = status.dump(4);
    write_file(dir / "LayerStatus", text.data(), text.size());
    return status;
}

nlohmann::json& layer_status(nlohmann::json& status, const std::string& name) {
    for (auto& o : status)
        if (o["layerName"] == name) return o;
    throw std::runtime_error("no layer " + name);
}

void write_status(const fsys::path& dir, const nlohmann::json& status) {
    const std::string text = status.dump();
    write_file(dir / "LayerStatus", text.data(), text.size());
}

struct TempDir {
    fsys::path path;
    TempDir() {
        char t[] = "/tmp/vds-dir-XXXXXX";
        path = ::mkdtemp(t);
    }
    ~TempDir() { fsys::remove_all(path); }
};

std::string sha1_of(const ncafs::Dataset& ds, const std::string& var) {
    const auto* v = ds.find_variable(var);
    if (!v) return "missing " + var;
    const auto raw = read_all(*v);
    return sha1_hex(raw.data(), raw.size());
}

TEST(VdsDirectory, FixturesRewrittenAsDirectoriesReadTheSame) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"r32_zip_const_novalue.vds", {"b1093d046684e4f9348078980613cc3dd2aa1c46", "060ce86a41a77b9f87675d5c287ee583bc39ac7b",
                                       "b3d49f0be5a192235f4e1e9d0ec694791a6200c9"}},
        {"u16_rle_quantized.vds", {"c011b7ff833b3777c28882a675d209a72d43a20c", "e71e67a0a9c275419d02c1b0732a0ade8f3ce68c",
                                   "ea09237d953758b9cb4bf67a3eb08eba189703ad"}},
        {"r64_2d_none.vds", {"bd82f2f71f36e2a2e85cf802a1635ed2a6e0eb48", "a5867bb062a3bea191870003d0667b2b6246b4be",
                             "08143c6cddef8fcf343aff66ed4be3fb676da521"}},
    };
    for (const auto& [file, sums] : cases) {
        SCOPED_TRACE(file);
        TempDir dir;
        to_directory(fixture(file), dir.path);
        const auto ds = ncafs::vds::open_vds_dataset(dir.path.string());
        EXPECT_EQ(sha1_of(ds, "Amplitude"), sums[0]);
        EXPECT_EQ(sha1_of(ds, "Amplitude_lod1"), sums[1]);
        EXPECT_EQ(sha1_of(ds, "Amplitude_lod2"), sums[2]);
    }
}

TEST(VdsDirectory, HostileLayerStatus) {
    TempDir dir;
    const auto status = to_directory(fixture("r32_zip_const_novalue.vds"), dir.path);
    auto expect_error = [&](const nlohmann::json& s, const std::string& needle) {
        write_status(dir.path, s);
        try {
            const auto ds = ncafs::vds::open_vds_dataset(dir.path.string());
            for (const auto& v : ds.variables) read_all(v);
            ADD_FAILURE() << "no error for " << needle;
        } catch (const ncafs::FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << needle << " not in: " << e.what();
        }
    };
    auto s = status;
    layer_status(s, "Dimensions_012LOD1")["compressionMethod"] = "WaveletLossless";
    expect_error(s, "layer Dimensions_012LOD1: Wavelet");
    s = status;
    layer_status(s, "Dimensions_012LOD0")["layerName"] = "../Dimensions_012LOD0";
    expect_error(s, "no primary LOD0 layer");  // only names built from the layout are ever opened
    s = status;
    layer_status(s, "Dimensions_012LOD0")["chunkCount"] = 17;
    expect_error(s, "layer Dimensions_012LOD0");
    s = status;
    layer_status(s, "Dimensions_012LOD0")["pageDirectory"] = nlohmann::json::array({0});
    expect_error(s, "pageDirectory");
    s = status;
    layer_status(s, "Dimensions_012LOD0")["chunkMetadataPageSize"] = 1 << 30;
    expect_error(s, "chunkMetadataPageSize");
    s = status;
    layer_status(s, "Dimensions_012LOD0")["hasChunkMetadataPages"] = false;
    expect_error(s, "hasChunkMetadataPages");
    s = status;
    layer_status(s, "Dimensions_012LOD0")["chunkMetadataPageSize"] = 64;  // stored pages are shorter
    layer_status(s, "Dimensions_012LOD0")["pageDirectory"] = nlohmann::json::array({0});
    expect_error(s, "metadata page too short");
    write_file(dir.path / "LayerStatus", std::string(300, '[').data(), 300);
    expect_error(nullptr, "LayerStatus");
}

// pageDirectory -1: every chunk of that page was never written -> noValue.
TEST(VdsDirectory, MissingPageMeansUnwrittenChunks) {
    TempDir dir;
    auto status = to_directory(fixture("r32_zip_const_novalue.vds"), dir.path, 32);
    layer_status(status, "Dimensions_012LOD0")["pageDirectory"] = nlohmann::json::array({-1});
    write_status(dir.path, status);
    const auto ds = ncafs::vds::open_vds_dataset(dir.path.string());
    const auto raw = read_all(*ds.find_variable("Amplitude"));
    for (size_t i = 0; i < raw.size(); i += 4 * 997) {
        float f;
        std::memcpy(&f, &raw[i], 4);
        ASSERT_EQ(f, -999.25f);
    }
}

}  // namespace
