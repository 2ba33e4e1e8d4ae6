// Variables with an UNLIMITED dimension after their first, written shorter
// than the dimensions (netCDF4-python at test time): netcdf-c 4.9.0 lays out
// a box that passes such a variable's HDF5 extent wrongly, so netcdf-c is
// asked for them a row at a time (in a helper, or here where none runs). Every value of random
// boxes is checked against what the writer wrote, and the fill outside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "chunk_test_suite.hpp"
#include "codecs/array_source.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"

namespace ncafs::netcdf {
namespace {

// v[a, b, c] = a * 100 + b * 10 + c + 1 where written ([:3, :2, :4] of
// (5, 4, 6)), -1 (its fill) elsewhere; w[b, a] = b * 100 + a * 10 + 1 over
// [:3, :2] of (4, 5), and /g/gv the same in a group, over the root's
// dimensions; z: v's values, deflated in chunks the DecodedChunkCache keeps.
constexpr const char* kWriter = R"PY(
import os, sys
import netCDF4, numpy as np
with netCDF4.Dataset(os.path.join(sys.argv[1], "inner.nc"), "w", format="NETCDF4") as ds:
    for name, n in (("a", 5), ("b", 4), ("c", 6)):
        ds.createDimension(name, None)
        ds.createVariable(name, "i4", (name,))[:] = np.arange(n)
    idx = np.indices((3, 2, 4))
    written = (idx[0] * 100 + idx[1] * 10 + idx[2] + 1).astype("f4")
    ds.createVariable("v", "f4", ("a", "b", "c"), fill_value=np.float32(-1))[:3, :2, :4] = written
    ds.createVariable("w", "f4", ("b", "a"), fill_value=np.float32(-1))[:3, :2] = written[:, :, 0]
    z = ds.createVariable("z", "f4", ("a", "b", "c"), fill_value=np.float32(-1), zlib=True, chunksizes=(16, 16, 16))
    z[:3, :2, :4] = written
    g = ds.createGroup("g").createVariable("gv", "f4", ("b", "a"), fill_value=np.float32(-1))
    g[:3, :2] = written[:, :, 0]
)PY";

float expected(uint64_t a, uint64_t b, uint64_t c, std::vector<uint64_t> written) {
    if (a >= written[0] || b >= written[1] || c >= written[2]) return -1;
    return static_cast<float>(a * 100 + b * 10 + c + 1);
}

class InnerUnlimitedTest : public test::ChunkTestSuite<InnerUnlimitedTest> {
public:
    static constexpr const char* kScript = kWriter;
    static constexpr const char* kPrefix = "ncafs-inner-unlimited";

protected:
    // 300 random boxes of src (rank 2 or 3), each value against the writer's.
    static void random_boxes(const ArraySource& src, std::vector<uint64_t> written, unsigned seed) {
        std::mt19937 rng(seed);
        const auto& shape = src.shape();
        const size_t rank = shape.size();
        for (int k = 0; k < 300; ++k) {
            std::vector<uint64_t> start(rank), count(rank);
            for (size_t d = 0; d < rank; ++d) {
                start[d] = rng() % shape[d];
                count[d] = 1 + rng() % (shape[d] - start[d]);
            }
            std::vector<float> out(element_count(count));
            src.read(start, count, ByteOrder::Native, out.data());
            size_t i = 0;
            for (uint64_t x = 0; x < count[0]; ++x)
                for (uint64_t y = 0; y < count[1]; ++y)
                    for (uint64_t z = 0; z < (rank == 3 ? count[2] : 1); ++z, ++i) {
                        const uint64_t c = rank == 3 ? start[2] + z : 0;
                        ASSERT_EQ(out[i], expected(start[0] + x, start[1] + y, c, written))
                            << "box " << k << " at " << start[0] + x << "," << start[1] + y << "," << c;
                    }
        }
    }
};

TEST_F(InnerUnlimitedTest, BoxesPassingTheWrittenExtentReadTheWrittenValuesAndTheFill) {
    auto ds = open_netcdf_dataset(OpenFile::open(path("inner.nc")));
    ASSERT_EQ(source(ds, "v").shape(), (std::vector<uint64_t>{5, 4, 6}));
    random_boxes(source(ds, "v"), {3, 2, 4}, 1);
    random_boxes(source(ds, "z"), {3, 2, 4}, 2);
}

TEST_F(InnerUnlimitedTest, ASecondUnlimitedDimensionFirstReadsRight) {
    auto ds = open_netcdf_dataset(OpenFile::open(path("inner.nc")));
    ASSERT_EQ(source(ds, "w").shape(), (std::vector<uint64_t>{4, 5}));
    random_boxes(source(ds, "w"), {3, 2, 1}, 3);
}

// A fragment variable named by a path (`/g/gv`) whose unlimited dimensions
// are the root group's.
TEST_F(InnerUnlimitedTest, AVariableOfAGroupOverTheRootsDimensionsReadsRight) {
    auto ds = open_netcdf_dataset(OpenFile::open(path("inner.nc")), nullptr, "/g");
    ASSERT_EQ(source(ds, "gv").shape(), (std::vector<uint64_t>{4, 5}));
    random_boxes(source(ds, "gv"), {3, 2, 1}, 4);
}

}  // namespace
}  // namespace ncafs::netcdf
