// Hostile volumes made to exhaust memory or time, generated here from the
// smallest OpenVDS fixture: a sparse 1 GiB container whose page directory
// claims 2^27 pages, a LayerStatus claiming chunkCount 2^31 with page size
// 1, a 16 MiB LayerStatus of millions of values, a sparse 1 GiB chunk
// object, and a container listing 150,000 files (unique, then with one
// repeat). Each is opened and read in a forked child: its peak memory
// (VmHWM) must stay under 512 MiB and its time under 10 s; a container
// refused once is refused again at once (its failure is remembered per file
// identity).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "codecs/error.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "tests/vds/vds_directory_support.hpp"
#include "tests/vds/vds_test_support.hpp"

namespace {

using namespace vds_test;

constexpr uint64_t kMemoryBound = 512ull << 20;
constexpr double kTimeBound = 10.0;
const char* kSmallest = "r32_zip_const_novalue.vds";

// Opens the volume and reads every variable: "" or the error's text.
std::string open_and_read(const std::string& path) {
    try {
        const auto ds = ncafs::vds::open_vds_dataset(path);
        for (const auto& v : ds.variables) read_all(v);
        return "";
    } catch (const ncafs::Error& e) {
        return e.what();
    }
}

struct Outcome {
    std::string first, second;
    double second_seconds = 0;
};

// Opens twice in a child process; the outcome text is "SECONDS\nFIRST\0SECOND".
Outcome twice_in_child(const std::string& path, ChildCost* cost) {
    *cost = cost_in_child([&] {
        const std::string first = open_and_read(path);
        const auto t0 = std::chrono::steady_clock::now();
        const std::string second = open_and_read(path);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return std::to_string(s) + "\n" + first + std::string(1, '\0') + second;
    });
    Outcome o;
    const size_t nl = cost->outcome.find('\n'), nul = cost->outcome.find('\0');
    if (nl == std::string::npos || nul == std::string::npos) {
        o.first = cost->outcome;
        return o;
    }
    o.second_seconds = std::stod(cost->outcome.substr(0, nl));
    o.first = cost->outcome.substr(nl + 1, nul - nl - 1);
    o.second = cost->outcome.substr(nul + 1);
    return o;
}

void expect_bounded(const ChildCost& cost, const std::string& what) {
    EXPECT_LT(cost.peak_bytes, kMemoryBound) << what << ": peak " << (cost.peak_bytes >> 20) << " MiB";
    EXPECT_LT(cost.seconds, kTimeBound) << what;
    std::printf("%s: peak %llu MiB, %.3f s\n", what.c_str(), static_cast<unsigned long long>(cost.peak_bytes >> 20),
                cost.seconds);
}

// The volume is refused with `needle` twice, within the bounds; with
// `remembered` (containers) the second time at once, not parsed again.
void expect_refused(const std::string& path, const std::string& needle, const std::string& what, bool remembered) {
    ChildCost cost;
    const Outcome o = twice_in_child(path, &cost);
    EXPECT_NE(o.first.find(needle), std::string::npos) << o.first;
    EXPECT_EQ(o.second, o.first);
    if (remembered) EXPECT_LT(o.second_seconds, 0.05) << "the failure was not remembered";
    expect_bounded(cost, what);
}

struct TempFile {
    std::string path;
    explicit TempFile(const std::vector<uint8_t>& bytes) : path(write_temp(bytes)) {}
    ~TempFile() { ::unlink(path.c_str()); }
};

// The primary LOD0 layer claims 2^27 chunks in pages of one entry: its page
// directory (1 GiB) lies in a sparse tail of the file.
TEST(VdsHostileSize, SparseContainerWithHugePageDirectory) {
    auto b = read_bytes(fixture(kSmallest));
    const FileRow r = row(walk(b), "Dimensions_012LOD0");
    const uint64_t directory = (b.size() + 4095) / 4096 * 4096;
    const uint64_t chunks = uint64_t{1} << 27;
    const uint64_t metadata = static_cast<uint64_t>(r.file_metadata_length);
    std::vector<uint8_t> head(b.begin() + static_cast<ptrdiff_t>(r.directory),
                              b.begin() + static_cast<ptrdiff_t>(r.directory + 16 + metadata));
    put<int64_t>(b, r.header_at, static_cast<int64_t>(directory));
    put<int32_t>(b, r.header_at + 8, static_cast<int32_t>(chunks));
    put<int32_t>(b, r.header_at + 16, 1);
    b.resize(directory);
    b.insert(b.end(), head.begin(), head.end());
    TempFile f(b);
    ASSERT_EQ(::truncate(f.path.c_str(), static_cast<off_t>(directory + 16 + metadata + chunks * 8)), 0);
    expect_refused(f.path, "layer Dimensions_012LOD0: 134217728 chunks, the layout gives", "sparse 1 GiB container", true);
}

// A container whose file table lists 150,000 files: the fixture's rows, then
// OBJ files of no chunk; with `repeat`, the last one repeats the first name.
std::vector<uint8_t> with_many_files(uint32_t count, bool repeat) {
    auto b = read_bytes(fixture(kSmallest));
    const auto rows = walk(b);
    const auto name_length = static_cast<uint64_t>(get<int32_t>(b, 28));
    const uint64_t row_bytes = 32 + name_length;
    const uint64_t table = b.size();
    const uint64_t layout_directory = row(rows, "VolumeDataLayout").directory;
    b.resize(table + count * row_bytes, 0);
    for (size_t i = 0; i < rows.size(); ++i)
        std::memcpy(&b[table + i * row_bytes], &b[rows[i].header_at], row_bytes);
    for (uint32_t i = static_cast<uint32_t>(rows.size()); i < count; ++i) {
        const uint64_t at = table + i * row_bytes;
        put<int64_t>(b, at, static_cast<int64_t>(layout_directory));  // a valid extent: no chunk, no page
        std::memcpy(&b[at + 20], "OBJ ", 4);
        const std::string name = repeat && i + 1 == count ? rows[0].name : "x" + std::to_string(i);
        std::memcpy(&b[at + 32], name.data(), std::min<size_t>(name.size(), name_length - 1));
    }
    put<int64_t>(b, 16, static_cast<int64_t>(table));
    put<int32_t>(b, 24, static_cast<int32_t>(count));
    return b;
}

TEST(VdsHostileSize, ContainerListing150000Files) {
    {
        TempFile f(with_many_files(150000, false));
        ChildCost cost;
        const Outcome o = twice_in_child(f.path, &cost);
        EXPECT_EQ(o.first, "");  // 150,000 distinct names are legal: it opens and reads
        expect_bounded(cost, "150,000 files");
    }
    TempFile f(with_many_files(150000, true));
    expect_refused(f.path, "listed twice", "150,000 files, one repeated", true);
}

// LayerStatus claims chunkCount 2^31 in pages of one entry, without a
// pageDirectory: refused by the layout's count before anything is sized by it.
TEST(VdsHostileSize, LayerStatusClaimingTwoToThe31Chunks) {
    TempDir dir;
    nlohmann::json status = to_directory(fixture(kSmallest), dir.path);
    nlohmann::json bomb = nlohmann::json::array();
    for (auto entry : status) {
        if (entry["layerName"] == "Dimensions_012LOD0") {
            entry["chunkCount"] = int64_t{1} << 31;
            entry["chunkMetadataPageSize"] = 1;
            entry.erase("pageDirectory");
        }
        bomb.push_back(entry);
    }
    write_status(dir.path, bomb);
    expect_refused(dir.path.string(), "layer Dimensions_012LOD0: 2147483648 chunks, the layout gives",
                   "LayerStatus chunkCount 2^31", false);
}

// A 16 MiB LayerStatus of empty objects: 5.6 million values, which a JSON
// parser would hold in some 450 MiB; refused by its weight before parsing.
TEST(VdsHostileSize, LayerStatusOfMillionsOfValues) {
    TempDir dir;
    to_directory(fixture(kSmallest), dir.path);
    std::string text = "[";
    while (text.size() < (16u << 20) - 8) text += "{},";
    text += "{}]";
    write_file(dir.path / "LayerStatus", text.data(), text.size());
    expect_refused(dir.path.string(), "JSON holds too many values", "LayerStatus of 5.6 million values", false);
}

// A chunk object replaced by a sparse 1 GiB file: refused from its size
// (fstat) on every read, never read.
TEST(VdsHostileSize, SparseGigabyteChunkObject) {
    TempDir dir;
    to_directory(fixture(kSmallest), dir.path);
    fsys::path object;
    for (const auto& e : fsys::directory_iterator(dir.path / "Dimensions_012LOD0"))
        if (e.is_regular_file()) object = e.path();
    ASSERT_FALSE(object.empty()) << "the fixture's LOD0 has no stored chunk";
    ASSERT_EQ(::truncate(object.c_str(), 1 << 30), 0);
    expect_refused(dir.path.string(), "exceeds the limit", "sparse 1 GiB chunk object", false);
}

}  // namespace
