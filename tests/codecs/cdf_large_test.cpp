// A variable over 4 GiB (the 32-bit vsize saturates at 2^32-1) in CDF-1, CDF-2
// and CDF-5 files written by netcdf-c in NOFILL mode: sparse, so the disk use
// stays small while offsets go beyond 4 GiB.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <mutex>
#include <random>

#include "codecs/realize_pieces.hpp"
#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/cdf/cdf_view.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/cdf/header_writer.hpp"
#include "codecs/cdf/layout.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "tests/codecs/cdf_test_support.hpp"

namespace ncafs::cdf {
namespace {

constexpr size_t kY = 40000, kX = 30000;  // 1.2e9 floats = 4.8e9 bytes
const std::vector<std::array<size_t, 2>> kWritten = {{0, 0}, {kY - 1, kX - 1}, {20000, 12345}, {35791, 29999}};

void create_large(const std::string& path, int mode, bool with_records) {
    std::lock_guard lock(netcdf_library_mutex());
    int ncid, old, small, y, x, t, vsmall, vbig, vrec;
    NC_OK(nc_create(path.c_str(), NC_CLOBBER | mode, &ncid));
    NC_OK(nc_set_fill(ncid, NC_NOFILL, &old));
    NC_OK(nc_def_dim(ncid, "small", 3, &small));
    NC_OK(nc_def_dim(ncid, "y", kY, &y));
    NC_OK(nc_def_dim(ncid, "x", kX, &x));
    NC_OK(nc_def_var(ncid, "small", NC_INT, 1, &small, &vsmall));
    int dims[2] = {y, x};
    NC_OK(nc_def_var(ncid, "big", NC_FLOAT, 2, dims, &vbig));
    if (with_records) {
        NC_OK(nc_def_dim(ncid, "t", NC_UNLIMITED, &t));
        int rd[2] = {t, small};
        NC_OK(nc_def_var(ncid, "rec", NC_SHORT, 2, rd, &vrec));
    }
    NC_OK(nc_enddef(ncid));
    int sv[3] = {7, 8, 9};
    NC_OK(nc_put_var_int(ncid, vsmall, sv));
    float value = 1;
    for (const auto& idx : kWritten) {
        NC_OK(nc_put_var1_float(ncid, vbig, idx.data(), &value));
        value += 1;
    }
    if (with_records) {
        short r[6] = {1, 2, 3, 4, 5, 6};
        size_t start[2] = {0, 0}, count[2] = {2, 3};
        NC_OK(nc_put_vara_short(ncid, vrec, start, count, r));
    }
    NC_OK(nc_close(ncid));
}

struct Case {
    int version;
    int mode;
    bool records;
};

class LargeVariable : public ::testing::TestWithParam<Case> {};

TEST_P(LargeVariable, ReaderLayoutSourceAndViewAgreeWithNetcdfC) {
    const Case c = GetParam();
    const std::string path = cdftest::temp_dir() + "/large" + std::to_string(c.version) + ".nc";
    create_large(path, c.mode, c.records);
    auto file = OpenFile::open(path);
    ASSERT_GT(file->size(), uint64_t{4} << 30);
    CdfHeader h = read_cdf_header(*file);
    ASSERT_EQ(h.version, c.version);
    CdfLayout layout = compute_layout(h, path);
    const size_t big = 1;
    EXPECT_EQ(h.variables[big].vsize, c.version == 5 ? uint64_t{kY} * kX * 4 : kSaturatedVsize);
    EXPECT_EQ(layout.variables[big].data_bytes, uint64_t{kY} * kX * 4);
    EXPECT_EQ(layout.file_size, file->size());
    if (c.records) {
        EXPECT_EQ(h.numrecs, 2u);
    }

    Dataset ds = open_cdf_dataset(path);
    {
        std::lock_guard lock(netcdf_library_mutex());
        int ncid;
        NC_OK(nc_open(path.c_str(), NC_NOWRITE, &ncid));
        std::mt19937_64 rng(1);
        auto samples = kWritten;
        for (int k = 0; k < 20; ++k) samples.push_back({rng() % kY, rng() % kX});
        for (const auto& idx : samples) {
            float theirs, ours;
            NC_OK(nc_get_var1_float(ncid, static_cast<int>(big), idx.data(), &theirs));
            std::vector<uint64_t> i64 = {idx[0], idx[1]};
            file->pread_exact(&ours, 4, layout.element_offset(big, i64));
            swap_from_big_endian(NcType::Float, &ours, 1);
            EXPECT_EQ(ours, theirs) << idx[0] << "," << idx[1];
            // A box around it through the source equals nc_get_vara.
            size_t start[2] = {idx[0] > 0 ? idx[0] - 1 : 0, idx[1] > 2 ? idx[1] - 2 : 0};
            size_t count[2] = {std::min<size_t>(3, kY - start[0]), std::min<size_t>(5, kX - start[1])};
            std::vector<float> a(count[0] * count[1]), b(a.size());
            NC_OK(nc_get_vara_float(ncid, static_cast<int>(big), start, count, a.data()));
            std::vector<uint64_t> s = {start[0], start[1]}, n = {count[0], count[1]};
            ds.variables[big].source->read(s, n, ByteOrder::Native, b.data());
            EXPECT_EQ(a, b);
        }
        NC_OK(nc_close(ncid));
    }

    auto dsp = std::make_shared<const Dataset>(std::move(ds));
    // netcdf-c accepted this schema in this version; our writer must agree and place it identically.
    auto view = make_cdf_view(dsp, CdfViewOptions{c.version});
    ASSERT_EQ(view->size(), file->size());
    std::vector<uint64_t> offsets = {0, h.header_size - 3, layout.variables[big].begin - 2, file->size() - 64};
    for (const auto& idx : kWritten) offsets.push_back(layout.element_offset(big, std::vector<uint64_t>{idx[0], idx[1]}) - 5);
    for (uint64_t off : offsets) {
        const uint64_t n = std::min<uint64_t>(64, file->size() - off);
        std::vector<uint8_t> expected(n), got(n);
        file->pread_exact(expected.data(), n, off);
        view->read(off, got);
        EXPECT_EQ(got, expected) << "offset " << off;
    }
    // A 1 MiB read inside the big variable stays one piece: the file's own extent.
    auto pieces = realize_all(*view, layout.variables[big].begin + (uint64_t{3} << 30), 1 << 20);
    ASSERT_EQ(pieces.size(), 1u);
    ASSERT_TRUE(pieces[0].extent.has_value());
    EXPECT_EQ(pieces[0].extent->offset, layout.variables[big].begin + (uint64_t{3} << 30));
    // The smallest version netcdf-c would choose.
    EXPECT_EQ(encode_cdf_header(*dsp).header.version, c.records ? 5 : 1);
}

INSTANTIATE_TEST_SUITE_P(Formats, LargeVariable,
                         ::testing::Values(Case{1, 0, false}, Case{2, NC_64BIT_OFFSET, false},
                                           Case{5, NC_64BIT_DATA, true}),
                         [](const auto& p) { return "CDF" + std::to_string(p.param.version); });

}  // namespace
}  // namespace ncafs::cdf
