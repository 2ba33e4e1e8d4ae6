// Hostile and damaged CDF headers end in FormatError: never a crash, a hang,
// another exception, or an allocation larger than the file could justify.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "codecs/cdf/header_reader.hpp"
#include "codecs/cdf/layout.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "tests/codecs/cdf_test_support.hpp"

// The largest single allocation since the last reset, across the process.
static std::atomic<size_t> g_largest_allocation{0};

// The replacement pair uses malloc/free on purpose.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
    size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
    while (n > seen && !g_largest_allocation.compare_exchange_weak(seen, n)) {
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace ncafs::cdf {
namespace {

// Parses; returns "" on success, "FormatError" or the unexpected exception's text.
// Also checks the largest allocation made while parsing.
std::string parse_outcome(const std::vector<uint8_t>& bytes, size_t length) {
    std::span<const uint8_t> view(bytes.data(), length);
    g_largest_allocation = 0;
    std::string outcome;
    try {
        CdfHeader h = parse_cdf_header(view, "hostile.nc");
        (void)compute_layout(h, "hostile.nc");
    } catch (const FormatError& e) {
        outcome = "FormatError";
        EXPECT_NE(std::string(e.what()).find("hostile.nc"), std::string::npos);
        EXPECT_LE(e.offset(), std::max<uint64_t>(length, 8));
    } catch (const std::exception& e) {
        outcome = std::string("unexpected exception: ") + e.what();
    }
    // Proportional to the bytes present (objects are a few times their encoding), never to a count.
    EXPECT_LE(g_largest_allocation.load(), 4096 + 16 * length) << "allocation outgrows the file";
    return outcome;
}

TEST(CdfBadInput, TruncationAtEveryByte) {
    for (const char* cdl : {"several_record_vars", "attribute_types", "cdf5_all_types", "utf8_names"}) {
        for (const auto& f : cdftest::corpus()) {
            if (f.cdl != cdl) continue;
            SCOPED_TRACE(f.label());
            auto bytes = cdftest::read_file(f.path);
            const uint64_t header_size = parse_cdf_header(bytes, f.path).header_size;
            for (size_t len = 0; len < bytes.size(); ++len) {
                std::string outcome = parse_outcome(bytes, len);
                if (len < header_size || len + 4 < bytes.size())
                    ASSERT_EQ(outcome, "FormatError") << "length " << len;
                else
                    ASSERT_TRUE(outcome.empty() || outcome == "FormatError") << outcome;
            }
        }
    }
}

TEST(CdfBadInput, TruncatedFileOnDisk) {
    const auto& f = cdftest::corpus_file("cf_timeseries", "nc6");
    auto bytes = cdftest::read_file(f.path);
    for (size_t len : {size_t{0}, size_t{3}, size_t{4}, size_t{50}, bytes.size() / 2, bytes.size() - 1}) {
        std::string path = cdftest::temp_dir() + "/truncated.nc";
        cdftest::write_file(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len)));
        auto file = OpenFile::open(path);
        EXPECT_THROW(read_cdf_header(*file), FormatError) << len;
    }
}

TEST(CdfBadInput, SeededRandomByteFlips) {
    std::mt19937_64 rng(20240601);
    const std::vector<std::pair<std::string, std::string>> seeds = {
        {"several_record_vars", "nc3"}, {"cdf5_all_types", "nc5"}, {"attribute_types", "nc6"},
        {"fill_values", "nc5"},         {"special_names", "nc3"},  {"many_variables", "nc6"}};
    size_t failures = 0, successes = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        const auto& [cdl, kind] = seeds[iter % seeds.size()];
        auto bytes = cdftest::read_file(cdftest::corpus_file(cdl, kind).path);
        const uint64_t header_size = parse_cdf_header(bytes, "x").header_size;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k) {
            size_t at = rng() % (iter % 5 == 0 ? bytes.size() : header_size);
            switch (rng() % 3) {
                case 0: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
                case 1: bytes[at] = static_cast<uint8_t>(rng()); break;
                default: bytes[at] = (rng() % 2) ? 0xFF : 0x7F; break;
            }
        }
        std::string outcome = parse_outcome(bytes, bytes.size());
        ASSERT_TRUE(outcome.empty() || outcome == "FormatError") << "iteration " << iter << ": " << outcome;
        (outcome.empty() ? successes : failures)++;
    }
    EXPECT_GT(failures, 500u);  // the flips do hit the parser's checks
    EXPECT_GT(successes, 10u);
}

// Hand-made headers. CDF-1/2 words are 4 bytes, CDF-5 8.
struct HeaderBuilder {
    int version;
    std::vector<uint8_t> b;
    explicit HeaderBuilder(int v) : version(v), b{'C', 'D', 'F', static_cast<uint8_t>(v)} {}
    HeaderBuilder& be(uint64_t v, int n) {
        for (int i = n; i-- > 0;) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
        return *this;
    }
    HeaderBuilder& word(uint64_t v) { return be(v, version == 5 ? 8 : 4); }
    HeaderBuilder& tag(uint32_t t) { return be(t, 4); }
    HeaderBuilder& name(const std::string& s) {
        word(s.size());
        b.insert(b.end(), s.begin(), s.end());
        while (b.size() % 4) b.push_back(0);
        return *this;
    }
    HeaderBuilder& absent() { return tag(0).word(0); }
    HeaderBuilder& begin(uint64_t v) { return be(v, version == 1 ? 4 : 8); }
    HeaderBuilder& zeros(size_t n) {
        b.insert(b.end(), n, 0);
        return *this;
    }
};

void expect_format_error(const std::vector<uint8_t>& bytes, const std::string& reason_part, const char* what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(parse_outcome(bytes, bytes.size()), "FormatError");
    try {
        parse_cdf_header(bytes, "hostile.nc");
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find(reason_part), std::string::npos) << e.what();
    }
}

// dims: x = len; one var v(dimids) of type, begin b.
std::vector<uint8_t> one_var(int version, std::vector<std::pair<std::string, uint64_t>> dims,
                             std::vector<uint64_t> dimids, uint32_t type, uint64_t begin, size_t data_bytes) {
    HeaderBuilder h(version);
    h.word(0);
    if (dims.empty()) {
        h.absent();
    } else {
        h.tag(0x0A).word(dims.size());
        for (auto& [n, l] : dims) h.name(n).word(l);
    }
    h.absent();
    h.tag(0x0B).word(1).name("v").word(dimids.size());
    for (auto id : dimids) h.word(id);
    h.absent().tag(type).word(4).begin(begin);
    h.zeros(data_bytes);
    return h.b;
}

TEST(CdfBadInput, HostileHeaders) {
    for (int v : {1, 2, 5}) {
        SCOPED_TRACE("CDF-" + std::to_string(v));
        const uint64_t hs = one_var(v, {{"x", 4}}, {0}, 4, 0, 0).size();  // header size with one dim
        // Sanity: the builder makes a valid file.
        EXPECT_EQ(parse_outcome(one_var(v, {{"x", 4}}, {0}, 4, hs, 16), 0), "FormatError");  // length 0 -> truncated
        auto ok = one_var(v, {{"x", 4}}, {0}, 4, hs, 16);
        ASSERT_EQ(parse_outcome(ok, ok.size()), "") << "builder broken";
        expect_format_error(HeaderBuilder(v).word(0).tag(0x0A).word(uint64_t{1} << 31).b, "dimension count",
                            "nelems 2^31");
        if (v == 5)
            expect_format_error(HeaderBuilder(v).word(0).tag(0x0A).word(uint64_t{1} << 62).b, "dimension count",
                                "nelems 2^62");
        expect_format_error(one_var(v, {{"x", v == 5 ? (uint64_t{1} << 40) : 0xFFFFFFFCu}}, {0}, 4, hs, 16),
                            "beyond the end", "huge dimension");
        expect_format_error(one_var(v, {{"x", 4}}, {0}, 4, 1u << 30, 16), "beyond the end", "begin past the end");
        expect_format_error(one_var(v, {{"x", 4}}, {0}, 4, 8, 16), "inside the header", "begin inside the header");
        expect_format_error(one_var(v, {{"t", 0}, {"u", 0}}, {0}, 4, hs, 16), "second record dimension",
                            "two record dims");
        expect_format_error(one_var(v, {{"x", 2}, {"t", 0}}, {0, 1}, 4, hs, 16), "not its first dimension",
                            "record dim not first");
        expect_format_error(one_var(v, {{"x", 4}}, {1}, 4, hs, 16), "out of range", "dimid out of range");
        expect_format_error(one_var(v, {{"x", 4}}, {0}, 0, hs, 16), "bad type tag", "type 0");
        expect_format_error(one_var(v, {{"x", 4}}, {0}, 12, hs, 16), "bad type tag", "type 12");
        if (v != 5) expect_format_error(one_var(v, {{"x", 4}}, {0}, 7, hs, 16), "only in CDF-5", "ubyte in CDF-1/2");
        {
            auto b = HeaderBuilder(v).word(0).tag(0x0D).word(1).b;
            expect_format_error(b, "unknown tag", "unknown tag");
        }
        expect_format_error(HeaderBuilder(v).word(0).tag(0).word(3).b, "ABSENT", "ABSENT with a count");
        expect_format_error(HeaderBuilder(v).word(0).tag(0x0A).word(1).name("").word(3).zeros(64).b, "empty name", "empty name");
        expect_format_error(HeaderBuilder(v).word(0).tag(0x0A).word(1).word(0xFFFFFFFFu).zeros(64).b, "name length",
                            "name length 2^32-1");
        {
            // A global attribute of 2^31 doubles.
            auto b = HeaderBuilder(v).word(0).absent().tag(0x0C).word(1).name("a").tag(6).word(uint64_t{1} << 31).b;
            expect_format_error(b, "length", "attribute nelems 2^31");
        }
        {
            // A variable of rank 2^31.
            auto b = HeaderBuilder(v).word(0).absent().absent().tag(0x0B).word(1).name("v").word(uint64_t{1} << 31).zeros(64).b;
            expect_format_error(b, "rank", "rank 2^31");
        }
    }
    // Size arithmetic overflowing 64 bits (CDF-5 dimensions of 2^40).
    expect_format_error(one_var(5, {{"x", uint64_t{1} << 40}, {"y", uint64_t{1} << 40}}, {0, 1}, 6, 200, 16),
                        "overflows", "element count overflow");
    // Negative CDF-1 begin and CDF-5 counts.
    expect_format_error(one_var(1, {{"x", 4}}, {0}, 4, 0x80000000u, 16), "negative begin", "negative begin");
    expect_format_error(HeaderBuilder(5).word(0).tag(0x0A).word(uint64_t{1} << 63).b, "negative", "negative count");
    expect_format_error({'C', 'D', 'F', 3, 0, 0, 0, 0}, "version", "version 3");
    expect_format_error({'H', 'D', 'F', 1}, "bad magic", "bad magic");
    expect_format_error({}, "truncated", "empty file");
    // Streaming numrecs with a record size that would be huge still stays bounded.
    {
        const uint64_t hs2 = one_var(2, {{"t", 0}, {"x", 4}}, {0, 1}, 6, 0, 0).size();
        auto b = one_var(2, {{"t", 0}, {"x", 4}}, {0, 1}, 6, hs2, 32);
        b[4] = b[5] = b[6] = b[7] = 0xFF;
        EXPECT_EQ(parse_outcome(b, b.size()), "");
        EXPECT_EQ(parse_cdf_header(b, "s").numrecs, 1u);
    }
}

// netcdf-c crashes on a 32-byte CDF-1 file claiming 2^31-1
// variables; every path into nc_open checks the header with our reader first.
TEST(CdfBadInput, NetcdfCNeverSeesAClassicHeaderWeReject) {
    const std::string path = cdftest::temp_dir() + "/claims.nc";
    std::vector<uint8_t> bytes = {'C', 'D', 'F', 1, 0, 0, 0, 0};  // numrecs 0
    bytes.resize(24, 0);                                          // dim_list, gatt_list ABSENT
    for (uint8_t b : {0, 0, 0, 0x0b, 0x7f, 0xff, 0xff, 0xff}) bytes.push_back(b);  // 2^31-1 variables
    cdftest::write_file(path, bytes);
    try {
        (void)netcdf::open_netcdf_dataset(path);
        ADD_FAILURE() << "opened";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.file(), path);
        EXPECT_NE(std::string(e.what()).find("variable count 2147483647"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace ncafs::cdf
