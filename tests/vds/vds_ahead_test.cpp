// Batches of a .vds view made ahead of a sequential reader
// (codecs/vds/vds_view.cpp): two views of classic files read in 128 KiB
// reads on two threads at once have batches made ahead, never more than one
// at a time of all views, and every view's bytes equal those of a fresh view
// read backwards (a reader that jumps: nothing made ahead); the values read
// are the ones written.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "codecs/vds/vds_view.hpp"
#include "tests/codecs/cdf_test_support.hpp"

using namespace ncafs;

namespace {

constexpr size_t kT = 100, kY = 180, kX = 360;  // 26 MB of floats: batches of 8 MiB of samples

float value(size_t i, int file) { return static_cast<float>(i % 100003) + 0.25f * static_cast<float>(file); }

std::string write_classic(int file) {
    const std::string path = cdftest::temp_dir() + "/ahead_" + std::to_string(file) + ".nc";
    std::vector<float> values(kT * kY * kX);
    for (size_t i = 0; i < values.size(); ++i) values[i] = value(i, file);
    std::lock_guard lock(netcdf_library_mutex());
    int ncid, dims[3], var;
    EXPECT_EQ(nc_create(path.c_str(), NC_CLOBBER, &ncid), NC_NOERR);
    nc_def_dim(ncid, "time", kT, &dims[0]);
    nc_def_dim(ncid, "lat", kY, &dims[1]);
    nc_def_dim(ncid, "lon", kX, &dims[2]);
    nc_def_var(ncid, "tas", NC_FLOAT, 3, dims, &var);
    nc_enddef(ncid);
    EXPECT_EQ(nc_put_var_float(ncid, var, values.data()), NC_NOERR);
    EXPECT_EQ(nc_close(ncid), NC_NOERR);
    return path;
}

std::shared_ptr<const VirtualFile> view_of(const std::string& path) {
    return make_vds_view(std::make_shared<const Dataset>(cdf::open_cdf_dataset(path)));
}

std::vector<uint8_t> read_forwards(const VirtualFile& vf) {
    std::vector<uint8_t> out(vf.size());
    for (uint64_t at = 0; at < out.size(); at += 128 << 10) {
        const uint64_t n = std::min<uint64_t>(128 << 10, out.size() - at);
        vf.read(at, std::span<uint8_t>(out.data() + at, n));
    }
    return out;
}

std::vector<uint8_t> read_backwards(const VirtualFile& vf) {
    std::vector<uint8_t> out(vf.size());
    for (uint64_t end = out.size(); end > 0;) {
        const uint64_t n = std::min<uint64_t>(128 << 10, end);
        end -= n;
        vf.read(end, std::span<uint8_t>(out.data() + end, n));
    }
    return out;
}

// Whether the float values of file `file` appear in the view's bytes: the
// first brick row (64 samples of lon at time 0, lat 0) after some descriptor.
bool holds_first_row(const std::vector<uint8_t>& bytes, int file) {
    float row[64];
    for (size_t x = 0; x < 64; ++x) row[x] = value(x, file);
    for (size_t at = 0; at + sizeof row <= bytes.size(); at += 4)
        if (std::memcmp(bytes.data() + at, row, sizeof row) == 0) return true;
    return false;
}

}  // namespace

TEST(VdsAhead, AtMostOneBatchAheadOfAllViewsAndTheSameBytes) {
    const std::string a = write_classic(0), b = write_classic(1);
    const auto view_a = view_of(a), view_b = view_of(b);
    std::vector<uint8_t> forwards_a, forwards_b;
    std::thread other([&] { forwards_b = read_forwards(*view_b); });
    forwards_a = read_forwards(*view_a);
    other.join();
    const BatchesAhead ahead = vds_batches_ahead();
    EXPECT_EQ(ahead.most, 1u) << "no batch was made ahead, or more than one at a time";
    EXPECT_TRUE(holds_first_row(forwards_a, 0));
    EXPECT_TRUE(holds_first_row(forwards_b, 1));
    EXPECT_EQ(forwards_a, read_backwards(*view_of(a)));
    EXPECT_EQ(forwards_b, read_backwards(*view_of(b)));
}
