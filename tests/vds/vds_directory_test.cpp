// The object-store directory form (openvds-notes.md §2.9): each OpenVDS
// fixture container is rewritten here as VolumeDataLayout, LayerStatus,
// <layer>/<chunk> and <layer>/ChunkMetadata/<page> (by the independent walker
// of vds_test_support), and must read back with the README's sha1s.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "tests/vds/vds_directory_support.hpp"
#include "tests/vds/vds_test_support.hpp"

namespace {

using namespace vds_test;
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
