// An NCA partition stored as an ncstream file (.ncs, as the daemon's ncstream
// view writes it): the one dispatcher (codecs/open_dataset.hpp) opens it by
// its magic number like any other fragment. The expected values are the ones
// written into the netCDF partitions by netcdf-c, not read back through our code.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <fstream>
#include <numeric>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "codecs/ncstream/ncstream_view.hpp"
#include "codecs/open_dataset.hpp"
#include "codecs/sniff.hpp"
#include "io/open_file.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

// A CDF-1 file with float tas(time=3, x=2) holding first, first+1, ...
void write_partition(const std::string& path, float first) {
    int ncid, t, x, v;
    test::nc_check(nc_create(path.c_str(), NC_CLOBBER, &ncid), path);
    test::nc_check(nc_def_dim(ncid, "time", 3, &t), path);
    test::nc_check(nc_def_dim(ncid, "x", 2, &x), path);
    int dims[2] = {t, x};
    test::nc_check(nc_def_var(ncid, "tas", NC_FLOAT, 2, dims, &v), path);
    test::nc_check(nc_enddef(ncid), path);
    std::vector<float> values(6);
    std::iota(values.begin(), values.end(), first);
    test::nc_check(nc_put_var_float(ncid, v, values.data()), path);
    test::nc_check(nc_close(ncid), path);
}

// The bytes of the .ncs view of nc_path, as a file of its own.
void write_ncstream_copy(const std::string& nc_path, const std::string& ncs_path) {
    auto view = make_ncstream_view(std::make_shared<const Dataset>(open_dataset(nc_path)), "b.ncs");
    std::vector<uint8_t> bytes(view->size());
    view->read(0, bytes);
    std::ofstream(ncs_path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                    static_cast<std::streamsize>(bytes.size()));
}

void write_aggregation(const std::string& path, const std::string& json) {
    int ncid, t, x, v;
    test::nc_check(nc_create(path.c_str(), NC_CLOBBER, &ncid), path);
    test::nc_check(nc_def_dim(ncid, "time", 6, &t), path);
    test::nc_check(nc_def_dim(ncid, "x", 2, &x), path);
    test::nc_check(nc_def_var(ncid, "tas", NC_FLOAT, 0, nullptr, &v), path);
    auto text = [&](const char* name, const std::string& value) {
        test::nc_check(nc_put_att_text(ncid, v, name, value.size(), value.c_str()), name);
    };
    text("cf_role", "nca_variable");
    text("nca_dimensions", "time x");
    text("nca_array", json);
    test::nc_check(nc_enddef(ncid), path);
    test::nc_check(nc_close(ncid), path);
}

}  // namespace

TEST(AggregationNcstreamPartitions, NcstreamPartitionReadsLikeItsNetcdfOriginal) {
    const std::string dir = test::fresh_dir("ncstream_partitions");
    write_partition(dir + "/a.nc", 0.0f);
    write_partition(dir + "/b.nc", 100.0f);
    write_ncstream_copy(dir + "/b.nc", dir + "/b.ncs");
    ASSERT_EQ(sniff_file(*OpenFile::open(dir + "/b.ncs")), FileFormat::Ncstream);
    write_aggregation(dir + "/agg.nca",
                      R"({"pmshape": [2], "pmdimensions": ["time"], "Partitions": [)"
                      R"({"index": [0], "location": [[0, 3], [0, 2]], "subarray": {"file": "a.nc", "ncvar": "tas", "shape": [3, 2]}},)"
                      R"({"index": [1], "location": [[3, 6], [0, 2]],)"
                      R"( "subarray": {"file": "b.ncs", "format": "ncstream", "ncvar": "tas", "shape": [3, 2]}}]})");
    auto ds = open_aggregation(dir + "/agg.nca", AggregationOptions{}, agg::DatasetCache::shared());
    const Variable* tas = ds->find_variable("tas");
    ASSERT_NE(tas, nullptr);
    std::vector<float> got(12);
    tas->source->read_linear(0, 12, ByteOrder::Native, got.data());
    const std::vector<float> expected = {0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105};
    EXPECT_EQ(got, expected);
}
