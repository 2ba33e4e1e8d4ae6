// Hostile and damaged .ncs files: every failure is a typed ncafs error (a
// FormatError naming the file and offset where the damage is found), never a
// crash, a hang or an unbounded allocation (the suite runs under ASan).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/ncstream/framing.hpp"
#include "codecs/ncstream/inflate_index.hpp"
#include "codecs/ncstream/ncstream_export.hpp"
#include "codecs/ncstream/ncstream_reader.hpp"
#include "codecs/ncstream/ncstream_view.hpp"
#include "codecs/open_dataset.hpp"
#include "io/open_file.hpp"
#include "ncstream_test_util.hpp"

namespace ncafs::ncstream {
namespace {

using namespace testing;

struct Files {
    std::string dir;
    std::vector<uint8_t> uncompressed;  // uncompressed view of classic_types
    std::vector<uint8_t> deflated;      // deflated export of classic_types
};

const Files& corpus() {
    static const Files f = [] {
        Files out;
        out.dir = make_temp_dir();
        const std::string nc = make_corpus_file(out.dir, "classic_types");
        auto ds = std::make_shared<const Dataset>(open_dataset(nc));
        auto view = make_ncstream_view(ds, "classic_types.ncs");
        out.uncompressed.resize(view->size());
        view->read(0, out.uncompressed);
        const std::string path = out.dir + "/deflated.ncs";
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        export_ncstream(*ds, fd, 6);
        ::close(fd);
        out.deflated = read_file(path);
        return out;
    }();
    return f;
}

// Opens the file at path and reads every variable; returns the error text or "".
std::string open_and_read_path(const std::string& path, uint64_t size) {
    try {
        Dataset ds = open_ncstream_dataset(path);
        for (const Variable& v : ds.variables) read_all(*v.source);
        return "";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.file(), path);
        EXPECT_LE(e.offset(), size) << e.what();
        return e.what();
    } catch (const Error& e) {
        return e.what();
    }
}

std::string open_and_read(const std::vector<uint8_t>& bytes) {
    const std::string path = corpus().dir + "/probe.ncs";
    write_file(path, bytes);
    return open_and_read_path(path, bytes.size());
}

TEST(NcstreamHostile, IntactFilesRead) {
    EXPECT_EQ(open_and_read(corpus().uncompressed), "");
    EXPECT_EQ(open_and_read(corpus().deflated), "");
}

TEST(NcstreamHostile, TruncationAtEveryByteIsAFormatError) {
    for (const auto* file : {&corpus().uncompressed, &corpus().deflated}) {
        // Write once, then cut the same file shorter and shorter.
        const std::string path = corpus().dir + "/cut.ncs";
        write_file(path, *file);
        for (size_t n = file->size(); n-- > 0;) {
            ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(n)), 0);
            EXPECT_THROW(open_ncstream_dataset(path), FormatError) << "truncated to " << n << " bytes";
        }
    }
}

TEST(NcstreamHostile, RandomByteFlipsNeverCrash) {
    std::mt19937_64 rng(2024);
    int errors = 0;
    // The flips are made through a descriptor kept open for writing: with the
    // settling window, every read would wait for that writer and be refused
    // (open_file.hpp). Here the damaged bytes themselves are the test.
    ncafs::set_settling_window(std::chrono::nanoseconds(0));
    for (const auto* file : {&corpus().uncompressed, &corpus().deflated}) {
        const std::string path = corpus().dir + "/flipped.ncs";
        write_file(path, *file);
        int fd = ::open(path.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        for (int k = 0; k < 750; ++k) {
            // Flip 1-3 bytes in place, probe, then restore them.
            std::vector<size_t> at;
            for (int f = 1 + static_cast<int>(rng() % 3); f > 0; --f) {
                at.push_back(rng() % file->size());
                uint8_t b = (*file)[at.back()] ^ static_cast<uint8_t>(1 + rng() % 255);
                ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(at.back())), 1);
            }
            if (!open_and_read_path(path, file->size()).empty()) ++errors;
            for (size_t a : at) ASSERT_EQ(::pwrite(fd, &(*file)[a], 1, static_cast<off_t>(a)), 1);
        }
        ::close(fd);
    }
    ncafs::set_settling_window(std::chrono::seconds(1));
    EXPECT_GT(errors, 0);  // damage is noticed (flips inside raw payloads cannot be)
}

pb::Header small_header() {
    pb::Header h;
    h.mutable_root()->set_name("");
    auto* d = h.mutable_root()->add_dims();
    d->set_name("x");
    d->set_length(25);
    auto* v = h.mutable_root()->add_vars();
    v->set_name("v");
    v->set_datatype(pb::INT);
    auto* s = v->add_shape();
    s->set_name("x");
    s->set_length(25);
    return h;
}

pb::Data small_data() {
    pb::Data d;
    d.set_varname("v");
    d.set_datatype(pb::INT);
    auto* r = d.mutable_section()->add_range();
    r->set_start(0);
    r->set_size(25);
    return d;
}

std::string expect_format_error(const std::vector<uint8_t>& bytes, const std::string& fragment) {
    std::string err = open_and_read(bytes);
    EXPECT_NE(err.find(fragment), std::string::npos) << "error was: " << err;
    return err;
}

TEST(NcstreamHostile, BadMagics) {
    expect_format_error({}, "no MAGIC_START");
    expect_format_error({'C', 'D', 'F', 1, 0, 0, 0, 0}, "no MAGIC_START");
    StreamBuilder b;
    b.start().raw({0xab, 0xec, 0xce, 0xba});
    expect_format_error(b.bytes(), "expected MAGIC_HEADER");
    StreamBuilder c;
    c.start().header(small_header()).raw({1, 2, 3, 4}).end();
    expect_format_error(c.bytes(), "unknown magic 01 02 03 04");
    StreamBuilder d;
    d.start().header(small_header()).raw({0xab, 0xeb, 0xbe, 0xba}).varint(0).end();
    expect_format_error(d.bytes(), "MAGIC_DATA2");
    StreamBuilder e;
    e.start().header(small_header()).header(small_header()).end();
    expect_format_error(e.bytes(), "MAGIC_HEADER messages after the first header");
    pb::Error err;
    err.set_message("server says no");
    std::string es;
    err.SerializeToString(&es);
    StreamBuilder f;
    f.start().header(small_header()).raw({0xab, 0xad, 0xba, 0xda}).varint(es.size())
        .raw(std::vector<uint8_t>(es.begin(), es.end())).end();
    expect_format_error(f.bytes(), "server says no");
}

TEST(NcstreamHostile, VarintsPast2To63AndLengthsPastTheEnd) {
    StreamBuilder a;
    a.start().raw({0xad, 0xec, 0xce, 0xda}).raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
    expect_format_error(a.bytes(), "varint reaches 2^63");
    StreamBuilder b;
    b.start().raw({0xad, 0xec, 0xce, 0xda}).varint(uint64_t{1} << 40).raw(std::vector<uint8_t>(100, 0));
    expect_format_error(b.bytes(), "reaches 2 GiB");
    StreamBuilder c;
    c.start().raw({0xad, 0xec, 0xce, 0xda}).varint(5000).raw(std::vector<uint8_t>(100, 0));
    expect_format_error(c.bytes(), "runs past the end");
    // Payload length past the end, and a payload that disagrees with the section.
    std::string ds;
    small_data().SerializeToString(&ds);
    StreamBuilder d;
    d.start().header(small_header()).raw({0xab, 0xec, 0xce, 0xba}).varint(ds.size())
        .raw(std::vector<uint8_t>(ds.begin(), ds.end())).varint(uint64_t{1} << 50).raw(std::vector<uint8_t>(10, 0));
    expect_format_error(d.bytes(), "runs past the end");
    StreamBuilder e;
    e.start().header(small_header()).data(small_data(), std::vector<uint8_t>(99, 0)).end();
    expect_format_error(e.bytes(), "payload of 99 bytes, the section holds 100");
    // A header that is not protobuf, or lacks a required field.
    StreamBuilder f;
    f.start().raw({0xad, 0xec, 0xce, 0xda}).varint(3).raw({0xff, 0xff, 0xff}).end();
    expect_format_error(f.bytes(), "not valid protobuf");
    pb::Header no_root;
    no_root.set_location("x");
    std::string nr;
    no_root.SerializePartialToString(&nr);
    StreamBuilder g;
    g.start().raw({0xad, 0xec, 0xce, 0xda}).varint(nr.size()).raw(std::vector<uint8_t>(nr.begin(), nr.end())).end();
    expect_format_error(g.bytes(), "lacks a required field");
}

TEST(NcstreamHostile, SectionsAndNamesChecked) {
    auto d = small_data();
    d.mutable_section()->mutable_range(0)->set_start(20);
    StreamBuilder a;
    a.start().header(small_header()).data(d, std::vector<uint8_t>(100, 0)).end();
    expect_format_error(a.bytes(), "outside dimension");
    auto e = small_data();
    e.set_varname("nope");
    StreamBuilder b;
    b.start().header(small_header()).data(e, std::vector<uint8_t>(100, 0)).end();
    expect_format_error(b.bytes(), "undeclared variable nope");
    auto f = small_data();
    f.set_datatype(pb::DOUBLE);
    StreamBuilder c;
    c.start().header(small_header()).data(f, std::vector<uint8_t>(200, 0)).end();
    expect_format_error(c.bytes(), "does not match the header");
    // Huge dimensions: counts overflow before anything is allocated.
    pb::Header h = small_header();
    h.mutable_root()->mutable_dims(0)->set_length(uint64_t{1} << 62);
    h.mutable_root()->mutable_vars(0)->mutable_shape(0)->set_length(uint64_t{1} << 62);
    StreamBuilder g;
    g.start().header(h).end();
    expect_format_error(g.bytes(), "2^63");
}

TEST(NcstreamHostile, DecompressionBombsStopAtUncompressedSize) {
    // 16 MiB of zeros announced as 100 bytes.
    std::vector<uint8_t> zeros(16 << 20, 0);
    std::vector<uint8_t> z(compressBound(zeros.size()));
    uLongf zn = z.size();
    ASSERT_EQ(compress2(z.data(), &zn, zeros.data(), zeros.size(), 9), Z_OK);
    z.resize(zn);
    auto d = small_data();
    d.set_compress(pb::DEFLATE);
    d.set_uncompressedsize(100);
    StreamBuilder a;
    a.start().header(small_header()).data(d, z).end();
    expect_format_error(a.bytes(), "more than the 100 bytes announced");
    // uncompressedSize that disagrees with the section is refused at open.
    d.set_uncompressedsize(1u << 30);
    StreamBuilder b;
    b.start().header(small_header()).data(d, z).end();
    expect_format_error(b.bytes(), "uncompressedSize");
    // Too short, corrupt, and trailing bytes after the zlib stream.
    std::vector<uint8_t> small(100, 7), zs(compressBound(100));
    uLongf zsn = zs.size();
    ASSERT_EQ(compress2(zs.data(), &zsn, small.data(), 50, 6), Z_OK);  // only 50 bytes
    zs.resize(zsn);
    d.set_uncompressedsize(100);
    StreamBuilder c;
    c.start().header(small_header()).data(d, zs).end();
    expect_format_error(c.bytes(), "inflates to 50 bytes");
    std::vector<uint8_t> raw_deflate(zs.begin() + 2, zs.end());  // no zlib header
    StreamBuilder e;
    e.start().header(small_header()).data(d, raw_deflate).end();
    expect_format_error(e.bytes(), "corrupt zlib stream");
}

TEST(NcstreamHostile, StringCountsChecked) {
    pb::Header h = small_header();
    h.mutable_root()->mutable_vars(0)->set_datatype(pb::STRING);
    auto d = small_data();
    d.set_datatype(pb::STRING);
    std::string ds;
    d.SerializeToString(&ds);
    StreamBuilder a;
    a.start().header(h).raw({0xab, 0xec, 0xce, 0xba}).varint(ds.size()).raw(std::vector<uint8_t>(ds.begin(), ds.end()))
        .varint(uint64_t{1} << 60).end();
    expect_format_error(a.bytes(), "strings for a section of 25");
    StreamBuilder b;
    b.start().header(h).raw({0xab, 0xec, 0xce, 0xba}).varint(ds.size()).raw(std::vector<uint8_t>(ds.begin(), ds.end()))
        .varint(25).varint(uint64_t{1} << 40).end();
    expect_format_error(b.bytes(), "in-memory limit");
    // A STRING variable declared with 2^40 values is refused before allocation.
    pb::Header huge = h;
    huge.mutable_root()->mutable_dims(0)->set_length(uint64_t{1} << 40);
    huge.mutable_root()->mutable_vars(0)->mutable_shape(0)->set_length(uint64_t{1} << 40);
    StreamBuilder c;
    c.start().header(huge).end();
    expect_format_error(c.bytes(), "too large to hold in memory");
}

}  // namespace
}  // namespace ncafs::ncstream

// A small deflated payload that inflates to gigabytes must
// not cost a full inflate per read near its end, nor a quadratic full read.
// The index inflates each block from its own inflater snapshot: after one
// pass, re-reading a block fetches about that block's compressed bytes only.
using ncafs::ncstream::InflateIndex;

TEST(NcstreamHostile, InflateIndexReadsABlockFromItsOwnSnapshot) {
    const uint64_t block = InflateIndex::kMinBlock, raw_size = 6 * block + 12345;
    std::vector<uint8_t> raw(raw_size);
    for (uint64_t i = 0; i < raw_size; ++i) raw[i] = static_cast<uint8_t>((i / 7) ^ (i >> 13));  // compressible, not flat
    std::vector<uint8_t> z(compressBound(raw.size()));
    uLongf zn = z.size();
    ASSERT_EQ(compress2(z.data(), &zn, raw.data(), raw.size(), 6), Z_OK);
    z.resize(zn);
    uint64_t fetched = 0;
    auto fetch = [&](uint64_t off, std::span<uint8_t> buf) {
        ASSERT_LE(off + buf.size(), z.size());
        std::memcpy(buf.data(), z.data() + off, buf.size());
        fetched += buf.size();
    };
    InflateIndex index(z.size(), raw.size(), block);
    ASSERT_EQ(index.block_count(), 7u);
    // Last block first (walks the whole stream once), then every block, backwards.
    for (uint64_t b = index.block_count(); b-- > 0;) {
        std::vector<uint8_t> out(index.block_bytes(b));
        ASSERT_EQ(index.inflate_block(b, out, fetch), std::nullopt) << b;
        ASSERT_TRUE(std::equal(out.begin(), out.end(), raw.begin() + static_cast<ptrdiff_t>(b * block))) << b;
    }
    fetched = 0;
    std::vector<uint8_t> out(index.block_bytes(5));
    ASSERT_EQ(index.inflate_block(5, out, fetch), std::nullopt);
    EXPECT_LT(fetched, z.size() / 3) << "a block read again must not inflate from the start";
    // Sizes: 4 GiB gets 8 MiB blocks; above 512 blocks of a quarter of the cache, refused.
    EXPECT_EQ(InflateIndex::block_size_for(uint64_t{4} << 30, 16 << 20), (uint64_t{4} << 30) / 512 + 1);
    EXPECT_EQ(InflateIndex::block_size_for((uint64_t{8} << 30) + 1024, 16 << 20), std::nullopt);
    // A stream longer than announced is still refused at its last block.
    InflateIndex shorter(z.size(), raw.size() - 1, block);
    std::vector<uint8_t> last(shorter.block_bytes(6));
    EXPECT_NE(shorter.inflate_block(6, last, fetch), std::nullopt);
}
