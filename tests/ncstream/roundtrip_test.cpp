// Corpus files (ncgen) -> our view / deflated export -> our reader, compared
// with what netcdf-c reads from the original .nc; plus random access and
// file-extent pass-through of the view.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>

#include "codecs/realize_pieces.hpp"
#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/ncstream/ncstream_export.hpp"
#include "codecs/ncstream/ncstream_reader.hpp"
#include "codecs/ncstream/ncstream_view.hpp"
#include "codecs/open_dataset.hpp"
#include "ncstream_test_util.hpp"

namespace ncafs::ncstream {
namespace {

using namespace testing;

std::vector<uint8_t> view_bytes(const VirtualFile& v) {
    std::vector<uint8_t> b(v.size());
    v.read(0, b);
    return b;
}

std::string strip_trailing_nuls(std::vector<uint8_t> v) {
    while (!v.empty() && v.back() == 0) v.pop_back();
    return std::string(v.begin(), v.end());
}

void expect_attributes_equal(const std::vector<Attribute>& ours, const std::vector<Attribute>& theirs,
                             const std::string& where) {
    ASSERT_EQ(ours.size(), theirs.size()) << where;
    for (size_t i = 0; i < ours.size(); ++i) {
        EXPECT_EQ(ours[i].name, theirs[i].name) << where;
        EXPECT_EQ(ours[i].type, theirs[i].type) << where << " " << ours[i].name;
        if (theirs[i].type == NcType::Char)  // text: trailing NULs are not carried (documented)
            EXPECT_EQ(strip_trailing_nuls(ours[i].values), strip_trailing_nuls(theirs[i].values)) << where;
        else
            EXPECT_EQ(ours[i].values, theirs[i].values) << where << " " << ours[i].name;
    }
}

// Everything our reader returns for `ncs` equals netcdf-c's reading of `nc`.
void expect_same_as_netcdf_c(const std::string& ncs, const std::string& nc, const ReaderOptions& options = {}) {
    const Dataset ours = open_ncstream_dataset(ncs, options);
    const NetcdfFileContents theirs = read_with_netcdf_c(nc);
    ASSERT_EQ(ours.dimensions.size(), theirs.dims.size()) << ncs;
    for (size_t i = 0; i < theirs.dims.size(); ++i) {
        EXPECT_EQ(ours.dimensions[i].name, theirs.dims[i].name);
        EXPECT_EQ(ours.dimensions[i].length, theirs.dims[i].length);
        EXPECT_EQ(ours.dimensions[i].unlimited, theirs.dims[i].unlimited);
    }
    expect_attributes_equal(ours.attributes, theirs.attributes, ncs + " globals");
    ASSERT_EQ(ours.variables.size(), theirs.variables.size());
    for (size_t i = 0; i < theirs.variables.size(); ++i) {
        const Variable& v = ours.variables[i];
        const NetcdfVariable& t = theirs.variables[i];
        SCOPED_TRACE(ncs + " variable " + t.name);
        EXPECT_EQ(v.name, t.name);
        EXPECT_EQ(static_cast<int>(v.type), t.type);
        EXPECT_EQ(ours.shape(v), t.shape);
        expect_attributes_equal(v.attributes, t.attributes, t.name);
        EXPECT_EQ(read_all(*v.source), t.values);
        // Random hyperslabs against nc_get_vara.
        std::mt19937 rng(7);
        for (int k = 0; k < 20 && !t.shape.empty(); ++k) {
            std::vector<uint64_t> start, count;
            for (uint64_t len : t.shape) {
                if (len == 0) {
                    start.push_back(0);
                    count.push_back(0);
                    continue;
                }
                uint64_t s = rng() % len;
                start.push_back(s);
                count.push_back(1 + rng() % (len - s));
            }
            std::vector<uint8_t> got(element_count(count) * type_size(v.type));
            v.source->read(start, count, ByteOrder::Native, got.data());
            EXPECT_EQ(got, netcdf_c_vara(nc, t.name, start, count));
        }
    }
}

class NcstreamRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(NcstreamRoundTrip, ViewThenReaderEqualsNetcdfC) {
    const std::string dir = make_temp_dir();
    const std::string nc = make_corpus_file(dir, GetParam());
    auto ds = std::make_shared<const Dataset>(open_dataset(nc));
    auto view = make_ncstream_view(ds, GetParam() + ".ncs");
    const std::string ncs = dir + "/view.ncs";
    write_file(ncs, view_bytes(*view));
    expect_same_as_netcdf_c(ncs, nc);
}

TEST_P(NcstreamRoundTrip, DeflatedExportThenReaderEqualsNetcdfC) {
    const std::string dir = make_temp_dir();
    const std::string nc = make_corpus_file(dir, GetParam());
    const Dataset ds = open_dataset(nc);
    for (int level : {-1, 0, 1, 9}) {
        const std::string ncs = dir + "/deflate" + std::to_string(level) + ".ncs";
        int fd = ::open(ncs.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ASSERT_GE(fd, 0);
        export_ncstream(ds, fd, level);
        ::close(fd);
        expect_same_as_netcdf_c(ncs, nc);
        ReaderOptions streamed;  // payloads over 16 bytes inflated as streams, on every read
        streamed.inflate_cache_bytes = 64;
        expect_same_as_netcdf_c(ncs, nc, streamed);
    }
}

TEST_P(NcstreamRoundTrip, UncompressedExportEqualsView) {
    const std::string dir = make_temp_dir();
    const std::string nc = make_corpus_file(dir, GetParam());
    auto ds = std::make_shared<const Dataset>(open_dataset(nc));
    const std::string ncs = dir + "/export.ncs";
    int fd = ::open(ncs.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    uint64_t last = 0, total_seen = 0;
    auto stats = export_ncstream(*ds, fd, std::nullopt, [&](uint64_t done, uint64_t total) {
        EXPECT_GE(done, last);
        last = done;
        total_seen = total;
    }, "x.ncs");
    ::close(fd);
    EXPECT_EQ(last, total_seen);
    EXPECT_EQ(read_file(ncs), view_bytes(*make_ncstream_view(ds, "x.ncs")));
    EXPECT_EQ(stats.bytes_written, read_file(ncs).size());
}

// Reading any range gives the same bytes as reading the whole file; pieces()
// tiles the range, and extents hold exactly the bytes read() gives. Returns
// whether any piece was a file extent.
bool check_random_access(const VirtualFile& view, const std::vector<uint8_t>& all) {
    std::mt19937_64 rng(99);
    bool saw_extent = false;
    for (int k = 0; k < 300; ++k) {
        uint64_t off = rng() % all.size();
        uint64_t len = rng() % (all.size() - off + 1);
        std::vector<uint8_t> part(len);
        view.read(off, part);
        EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + static_cast<std::ptrdiff_t>(off)));
        uint64_t at = off;
        for (const ViewPiece& p : realize_all(view, off, len)) {
            EXPECT_EQ(p.offset, at);
            EXPECT_GT(p.length, 0u);
            if (p.extent) {
                saw_extent = true;
                std::vector<uint8_t> b(p.extent->length);
                EXPECT_EQ(p.extent->length, p.length);
                p.extent->file->pread_exact(b.data(), b.size(), p.extent->offset);
                EXPECT_TRUE(std::equal(b.begin(), b.end(), all.begin() + static_cast<std::ptrdiff_t>(p.offset)));
            }
            at += p.length;
        }
        EXPECT_EQ(at, off + len);
    }
    std::vector<uint8_t> one(1);
    EXPECT_THROW(view.read(all.size(), one), UsageError);
    return saw_extent;
}

TEST_P(NcstreamRoundTrip, RandomAccessAndPieces) {
    const std::string dir = make_temp_dir();
    const std::string nc = make_corpus_file(dir, GetParam());
    // A view of the .nc (CDF reader: extents where the bytes are big-endian already).
    auto first = make_ncstream_view(std::make_shared<const Dataset>(open_dataset(nc)), "a");
    const std::vector<uint8_t> all = view_bytes(*first);
    const bool cdf_extents = check_random_access(*first, all);
    const std::string ncs = dir + "/view.ncs";
    write_file(ncs, all);
    // A view of the .ncs read back: its variables answer with extents too.
    auto again = make_ncstream_view(std::make_shared<const Dataset>(open_ncstream_dataset(ncs)), "a");
    ASSERT_EQ(view_bytes(*again), all);  // same location, same bytes: the view reproduces the file
    const bool ncs_extents = check_random_access(*again, all);
    if (GetParam() != "empty_record") {
        EXPECT_TRUE(ncs_extents);
    }
    std::printf("%s: extents from the CDF source: %s, from the .ncs source: %s\n", GetParam().c_str(),
                cdf_extents ? "yes" : "no", ncs_extents ? "yes" : "no");
}

// Several threads reading one view of a deflated .ncs (shared inflate cache,
// a cache small enough to evict and to stream the larger payloads).
TEST(NcstreamConcurrency, ThreadsReadTheSameView) {
    const std::string dir = make_temp_dir();
    const std::string nc = make_corpus_file(dir, "classic_types");
    const std::string ncs = dir + "/deflated.ncs";
    int fd = ::open(ncs.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    export_ncstream(open_dataset(nc), fd, 6);
    ::close(fd);
    ReaderOptions small;
    small.inflate_cache_bytes = 256;  // payloads above 64 bytes are streamed, the rest evicted often
    auto view = make_ncstream_view(std::make_shared<const Dataset>(open_ncstream_dataset(ncs, small)), "c");
    const std::vector<uint8_t> all = view_bytes(*make_ncstream_view(
        std::make_shared<const Dataset>(open_dataset(nc)), "c"));
    ASSERT_EQ(view->size(), all.size());
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(static_cast<uint64_t>(t));
            for (int k = 0; k < 200; ++k) {
                uint64_t off = rng() % all.size();
                std::vector<uint8_t> part(rng() % (all.size() - off + 1));
                view->read(off, part);
                if (!std::equal(part.begin(), part.end(), all.begin() + static_cast<std::ptrdiff_t>(off))) ++mismatches;
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Corpus, NcstreamRoundTrip, ::testing::ValuesIn(corpus_names()));

}  // namespace
}  // namespace ncafs::ncstream
