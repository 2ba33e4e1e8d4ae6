// The CDF header writer and the CDF view against ncgen's files, the spec's
// worked example, and netcdf-c's own placement and size limits.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <cstring>
#include <mutex>
#include <random>

#include "codecs/realize_pieces.hpp"
#include "codecs/array_source.hpp"
#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/cdf/cdf_view.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/cdf/header_writer.hpp"
#include "codecs/cdf/layout.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "tests/codecs/cdf_test_support.hpp"

namespace ncafs::cdf {
namespace {

using cdftest::corpus;
using cdftest::CorpusFile;

// A test source holding native values in memory; element by element on purpose
// (independent of the code under test).
class MemorySource final : public ArraySource {
public:
    MemorySource(NcType t, std::vector<uint64_t> shape, std::vector<uint8_t> native)
        : type_(t), shape_(std::move(shape)), data_(std::move(native)) {}
    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override {
        check_box(shape_, start, count, "memory");
        const size_t es = type_size(type_);
        uint64_t total = 1;
        for (auto c : count) total *= c;
        std::vector<uint64_t> idx(start.begin(), start.end());
        auto* o = static_cast<uint8_t*>(out);
        for (uint64_t k = 0; k < total; ++k) {
            uint64_t lin = 0;
            for (size_t d = 0; d < shape_.size(); ++d) lin = lin * shape_[d] + idx[d];
            std::memcpy(o + k * es, data_.data() + lin * es, es);
            for (size_t d = shape_.size(); d-- > 0;) {
                if (++idx[d] < start[d] + count[d]) break;
                idx[d] = start[d];
            }
        }
        if (order == ByteOrder::Big) swap_to_big_endian(type_, out, total);
    }

private:
    NcType type_;
    std::vector<uint64_t> shape_;
    std::vector<uint8_t> data_;
};

template <typename T>
std::shared_ptr<const ArraySource> memory(NcType t, std::vector<uint64_t> shape, const std::vector<T>& v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(T));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return std::make_shared<MemorySource>(t, std::move(shape), std::move(bytes));
}

std::vector<uint8_t> read_view(const VirtualFile& view, uint64_t offset, uint64_t n) {
    std::vector<uint8_t> out(n);
    view.read(offset, out);
    return out;
}

// netcdf-c writes a dataset with no dimensions, attributes or variables as a
// 4096-byte file (ncx_put_NC writes a whole first chunk when the header is the
// minimal 32/48 bytes); the spec says the empty file has 32 (CDF-1/2) or 48
// (CDF-5) bytes, which is what we produce (docs/formats/cdf.md, "The empty
// dataset exception"). The extra bytes are zeros.
bool is_netcdf_c_empty_file_quirk(const std::vector<uint8_t>& ncgen_bytes, uint64_t header_size) {
    return ncgen_bytes.size() == 4096 && header_size < 4096 &&
           std::all_of(ncgen_bytes.begin() + static_cast<std::ptrdiff_t>(header_size), ncgen_bytes.end(),
                       [](uint8_t b) { return b == 0; });
}

TEST(CdfWriter, HeaderBytesAndBeginsIdenticalToNcgen) {
    for (const CorpusFile& f : corpus()) {
        SCOPED_TRACE(f.label());
        auto bytes = cdftest::read_file(f.path);
        CdfHeader parsed = parse_cdf_header(bytes, f.path);
        Dataset ds = open_cdf_dataset(f.path);
        EncodedCdfHeader enc = encode_cdf_header(ds, f.version);
        ASSERT_EQ(enc.header.header_size, parsed.header_size);
        ASSERT_EQ(enc.bytes.size(), parsed.header_size);
        EXPECT_TRUE(std::equal(enc.bytes.begin(), enc.bytes.end(), bytes.begin())) << "header bytes differ";
        for (size_t v = 0; v < parsed.variables.size(); ++v) {
            EXPECT_EQ(enc.header.variables[v].begin, parsed.variables[v].begin) << parsed.variables[v].name;
            EXPECT_EQ(enc.header.variables[v].vsize, parsed.variables[v].vsize) << parsed.variables[v].name;
        }
        if (is_netcdf_c_empty_file_quirk(bytes, enc.bytes.size())) {
            EXPECT_EQ(compute_layout(enc.header, "x").file_size, f.version == 5 ? 48u : 32u);
            bytes.resize(enc.bytes.size());
        }
        EXPECT_EQ(compute_layout(enc.header, "x").file_size, bytes.size());
        // Our header followed by the original data: netcdf-c opens it and sees the same numrecs.
        std::vector<uint8_t> rebuilt = enc.bytes;
        rebuilt.insert(rebuilt.end(), bytes.begin() + static_cast<std::ptrdiff_t>(enc.bytes.size()), bytes.end());
        EXPECT_EQ(rebuilt, bytes);
        std::string out = cdftest::temp_dir() + "/rebuilt_" + f.label() + ".nc";
        cdftest::write_file(out, rebuilt);
        std::lock_guard lock(netcdf_library_mutex());
        int ncid, nvars;
        NC_OK(nc_open(out.c_str(), NC_NOWRITE, &ncid));
        NC_OK(nc_inq_nvars(ncid, &nvars));
        EXPECT_EQ(static_cast<size_t>(nvars), ds.variables.size());
        NC_OK(nc_close(ncid));
    }
}

TEST(CdfWriter, ChoosesTheSmallestVersion) {
    for (const CorpusFile& f : corpus()) {
        Dataset ds = open_cdf_dataset(f.path);
        EncodedCdfHeader enc = encode_cdf_header(ds);
        EXPECT_EQ(enc.header.version, f.cdl.rfind("cdf5_", 0) == 0 ? 5 : 1) << f.label();
        if (f.cdl.rfind("cdf5_", 0) == 0) {
            EXPECT_THROW(encode_cdf_header(ds, 1), UsageError);
            EXPECT_THROW(encode_cdf_header(ds, 2), UsageError);
        }
    }
}

TEST(CdfView, IdenticalToNcgenFiles) {
    std::mt19937_64 rng(3);
    for (const CorpusFile& f : corpus()) {
        SCOPED_TRACE(f.label());
        auto bytes = cdftest::read_file(f.path);
        auto ds = std::make_shared<const Dataset>(open_cdf_dataset(f.path));
        auto view = make_cdf_view(ds, CdfViewOptions{f.version});
        if (is_netcdf_c_empty_file_quirk(bytes, view->size())) bytes.resize(view->size());
        ASSERT_EQ(view->size(), bytes.size());
        ASSERT_EQ(read_view(*view, 0, bytes.size()), bytes);
        for (int k = 0; k < 200; ++k) {
            uint64_t off = rng() % bytes.size();
            uint64_t n = rng() % std::min<uint64_t>(bytes.size() - off + 1, k % 2 ? 16 : 4096);
            ASSERT_EQ(read_view(*view, off, n),
                      std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(off),
                                           bytes.begin() + static_cast<std::ptrdiff_t>(off + n)))
                << "offset " << off << " length " << n;
        }
        // pieces(): pass-through extents of the original file plus computed bytes.
        for (int k = 0; k < 50; ++k) {
            uint64_t off = k == 0 ? 0 : rng() % bytes.size();
            uint64_t n = k == 0 ? bytes.size() : rng() % (bytes.size() - off + 1);
            std::vector<uint8_t> got;
            uint64_t expect_at = off;
            for (const ViewPiece& p : realize_all(*view, off, n)) {
                ASSERT_EQ(p.offset, expect_at);
                std::vector<uint8_t> part(p.length);
                if (p.extent) {
                    ASSERT_EQ(p.extent->length, p.length);
                    p.extent->file->pread_exact(part.data(), p.length, p.extent->offset);
                } else {
                    view->read(p.offset, part);
                }
                got.insert(got.end(), part.begin(), part.end());
                expect_at += p.length;
            }
            ASSERT_EQ(got, std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(off),
                                                bytes.begin() + static_cast<std::ptrdiff_t>(off + n)));
        }
        if (f.cdl == "larger_fixed") {
            // Three unpadded variables: all their data is one extent of the original file.
            const uint64_t begin = parse_cdf_header(bytes, f.path).variables[0].begin;
            auto pieces = realize_all(*view, begin, bytes.size() - begin);
            ASSERT_EQ(pieces.size(), 1u);
            ASSERT_TRUE(pieces[0].extent.has_value());
            EXPECT_EQ(pieces[0].extent->offset, begin);
            EXPECT_EQ(pieces[0].extent->length, bytes.size() - begin);
        }
    }
}

// The spec's worked example tiny.cdl: short vx(dim=5) = 3,1,4,1,5.
TEST(CdfView, SpecTinyExample) {
    auto ds = std::make_shared<Dataset>();
    ds->origin = "tiny";
    ds->dimensions = {{"dim", 5, false}};
    ds->variables.push_back({"vx", NcType::Short, {0}, {}, memory<int16_t>(NcType::Short, {5}, {3, 1, 4, 1, 5})});
    const std::vector<uint8_t> cdf2 = {
        'C', 'D', 'F', 2, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 3, 'd', 'i', 'm', 0, 0, 0, 0, 5,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11, 0, 0, 0, 1, 0, 0, 0, 2, 'v', 'x', 0, 0, 0, 0, 0, 1,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 84,
        0, 3, 0, 1, 0, 4, 0, 1, 0, 5, 0x80, 1};
    auto v2 = make_cdf_view(ds, CdfViewOptions{2});
    ASSERT_EQ(v2->size(), 96u);
    EXPECT_EQ(read_view(*v2, 0, 96), cdf2);
    auto v5 = make_cdf_view(ds, CdfViewOptions{5});
    ASSERT_EQ(v5->size(), 140u);
    auto b5 = read_view(*v5, 0, 140);
    const std::vector<uint8_t> tail5 = {0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 128,
                                        0, 3, 0, 1, 0, 4, 0, 1, 0, 5, 0x80, 1};
    EXPECT_EQ(std::vector<uint8_t>(b5.end() - 32, b5.end()), tail5);
    EXPECT_EQ(std::vector<uint8_t>(b5.begin(), b5.begin() + 4), (std::vector<uint8_t>{'C', 'D', 'F', 5}));
    // Default: the smallest version, CDF-1 (same as CDF-2 but 4-byte begin).
    auto v1 = make_cdf_view(ds, {});
    EXPECT_EQ(v1->size(), 92u);
}

// A dataset CDF can only show after normalising: two unlimited dimensions, an
// unlimited dimension not first, a converted type, a missing source (fill).
TEST(CdfView, NormalisedDatasetReadsBackThroughNetcdfC) {
    auto ds = std::make_shared<Dataset>();
    ds->origin = "synthetic";
    ds->dimensions = {{"u1", 2, true}, {"x", 3, false}, {"u2", 4, true}};
    ds->attributes = {Attribute::text("title", "normalised")};
    ds->variables.push_back({"a", NcType::Int, {1, 0}, {}, memory<int32_t>(NcType::Int, {3, 2}, {1, 2, 3, 4, 5, 6})});
    ds->variables.push_back(
        {"b", NcType::Short, {2}, {}, memory<int16_t>(NcType::Short, {4}, {10, 20, 30, 40})});
    // float variable fed by a double source: converted.
    ds->variables.push_back({"c", NcType::Float, {2, 1}, {},
                             memory<double>(NcType::Double, {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})});
    Variable fill{"d", NcType::Byte, {1}, {Attribute::numeric<int8_t>("_FillValue", NcType::Byte, {5})}, nullptr};
    ds->variables.push_back(fill);
    auto view = make_cdf_view(ds, {});
    std::string path = cdftest::temp_dir() + "/normalised.nc";
    cdftest::write_file(path, read_view(*view, 0, view->size()));
    // u1 is used as a non-first dimension, so u2 (first wherever used) is the record dimension.
    std::lock_guard lock(netcdf_library_mutex());
    int ncid, unlim;
    NC_OK(nc_open(path.c_str(), NC_NOWRITE, &ncid));
    NC_OK(nc_inq_unlimdim(ncid, &unlim));
    EXPECT_EQ(unlim, 2);
    size_t len;
    NC_OK(nc_inq_dimlen(ncid, 0, &len));
    EXPECT_EQ(len, 2u);
    NC_OK(nc_inq_dimlen(ncid, 2, &len));
    EXPECT_EQ(len, 4u);
    int a[6];
    NC_OK(nc_get_var_int(ncid, 0, a));
    EXPECT_EQ(std::vector<int>(a, a + 6), (std::vector<int>{1, 2, 3, 4, 5, 6}));
    short b[4];
    NC_OK(nc_get_var_short(ncid, 1, b));
    EXPECT_EQ(std::vector<short>(b, b + 4), (std::vector<short>{10, 20, 30, 40}));
    float c[12];
    NC_OK(nc_get_var_float(ncid, 2, c));
    for (int i = 0; i < 12; ++i) EXPECT_EQ(c[i], static_cast<float>(i + 1));
    signed char d[3];
    NC_OK(nc_get_var_schar(ncid, 3, d));
    EXPECT_EQ(std::vector<int>(d, d + 3), (std::vector<int>{5, 5, 5}));
    NC_OK(nc_close(ncid));
}

TEST(CdfView, UnrepresentableDatasetsAreUsageErrors) {
    auto ds = std::make_shared<Dataset>();
    ds->origin = "bad";
    ds->dimensions = {{"u1", 0, true}, {"u2", 0, true}};
    ds->variables.push_back({"a", NcType::Int, {0, 1}, {}, nullptr});
    // u2 becomes fixed with length 0: not representable.
    EXPECT_THROW(make_cdf_view(ds, {}), UsageError);
    auto ds2 = std::make_shared<Dataset>();
    ds2->origin = "ubyte";
    ds2->dimensions = {{"x", 2, false}};
    ds2->variables.push_back({"a", NcType::UByte, {0}, {}, nullptr});
    EXPECT_THROW(make_cdf_view(ds2, CdfViewOptions{1}), UsageError);
    EXPECT_THROW(make_cdf_view(ds2, CdfViewOptions{3}), UsageError);
    EXPECT_EQ(make_cdf_view(ds2, {})->size(), encode_cdf_header(*ds2, 5).bytes.size() + 4);
}

// netcdf-c decides, for the same schema, which formats can hold it (nc_enddef
// fails with NC_EVARSIZE / nc_def_dim with NC_EDIMSIZE) and where the header
// ends; our writer must agree. Files are NOFILL, so they stay sparse.
struct Schema {
    const char* label;
    std::vector<std::pair<std::string, uint64_t>> dims;  // length 0: unlimited
    std::vector<std::pair<std::string, std::vector<size_t>>> vars;  // all byte
};

TEST(CdfWriter, VersionLimitsAgreeWithNetcdfC) {
    const uint64_t GiB = uint64_t{1} << 30;
    const std::vector<Schema> schemas = {
        {"three 1 GiB vars", {{"x", GiB}}, {{"a", {0}}, {"b", {0}}, {"c", {0}}}},
        {"3 GiB var last", {{"x", 1000}, {"y", 3 * GiB}}, {{"a", {0}}, {"b", {1}}}},
        {"3 GiB var not last", {{"x", 1000}, {"y", 3 * GiB}}, {{"b", {1}}, {"a", {0}}}},
        {"5 GiB var last", {{"x", 5}, {"y", GiB}}, {{"a", {0}}, {"b", {0, 1}}}},
        {"5 GiB var and record var", {{"t", 0}, {"x", 5}, {"y", GiB}}, {{"b", {1, 2}}, {"r", {0}}}},
        {"3e9 dimension", {{"x", 3000000000}}, {{"a", {0}}}},
        {"two big record vars", {{"t", 0}, {"y", 3 * GiB}}, {{"r1", {0, 1}}, {"r2", {0, 1}}}},
        {"big record var last", {{"t", 0}, {"x", 5}, {"y", 3 * GiB}}, {{"r1", {0, 1}}, {"r2", {0, 2}}}},
    };
    const std::pair<int, int> formats[] = {{1, NC_CLASSIC_MODEL}, {2, NC_64BIT_OFFSET}, {5, NC_64BIT_DATA}};
    for (const Schema& s : schemas) {
        Dataset ds;
        ds.origin = s.label;
        for (const auto& [name, len] : s.dims) ds.dimensions.push_back({name, len, len == 0});
        for (const auto& [name, dimids] : s.vars) ds.variables.push_back({name, NcType::Byte, dimids, {}, nullptr});
        CdfHeader model = cdf_model_of(ds);
        for (const auto& [version, mode] : formats) {
            SCOPED_TRACE(std::string(s.label) + " CDF-" + std::to_string(version));
            std::string path = cdftest::temp_dir() + "/limits.nc";
            bool netcdf_ok = true;
            {
                std::lock_guard lock(netcdf_library_mutex());
                int ncid, old;
                NC_OK(nc_create(path.c_str(), NC_CLOBBER | (version == 1 ? 0 : mode), &ncid));
                NC_OK(nc_set_fill(ncid, NC_NOFILL, &old));
                std::vector<int> dimids;
                for (const auto& [name, len] : s.dims) {
                    int id;
                    if (nc_def_dim(ncid, name.c_str(), len == 0 ? NC_UNLIMITED : len, &id) != NC_NOERR) netcdf_ok = false;
                    dimids.push_back(id);
                }
                for (const auto& [name, ids] : s.vars) {
                    if (!netcdf_ok) break;
                    std::vector<int> d;
                    for (size_t i : ids) d.push_back(dimids[i]);
                    int varid;
                    NC_OK(nc_def_var(ncid, name.c_str(), NC_BYTE, static_cast<int>(d.size()), d.data(), &varid));
                }
                if (netcdf_ok && nc_enddef(ncid) != NC_NOERR) netcdf_ok = false;
                nc_close(ncid);
            }
            auto why = why_version_cannot_hold(model, version);
            EXPECT_EQ(netcdf_ok, !why.has_value()) << (why ? *why : "we accept, netcdf-c refuses");
            if (netcdf_ok && !why) {
                EncodedCdfHeader enc = encode_cdf_header(ds, version);
                auto file = OpenFile::open(path);
                std::vector<uint8_t> theirs(enc.bytes.size());
                file->pread_exact(theirs.data(), theirs.size(), 0);
                EXPECT_EQ(enc.bytes, theirs);
                EXPECT_EQ(compute_layout(enc.header, "x").file_size, file->size());
            }
        }
    }
}

}  // namespace
}  // namespace ncafs::cdf
