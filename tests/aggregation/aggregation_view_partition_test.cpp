// NCA partitions stored in the formats of our own views: a ds file
// (`format: "ds"`) and an ncstream file (`format: "ncstream"`, as the
// daemon's .ncs view writes it). The one dispatcher (codecs/open_dataset.hpp)
// chooses the reader by magic number. The expected values are the ones
// written into the netCDF partitions by netcdf-c, not read back through our code.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <fstream>
#include <numeric>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "codecs/ds/ds_view.hpp"
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

// The bytes of a view, as a file of its own.
void write_view_copy(const VirtualFile& view, const std::string& path) {
    std::vector<uint8_t> bytes(view.size());
    view.read(0, bytes);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
}

std::shared_ptr<const Dataset> netcdf_dataset(const std::string& path) {
    return std::make_shared<const Dataset>(open_dataset(path));
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


// a.nc and b.nc's copy in another format (second_subarray names it): the
// master array reads the values netcdf-c wrote into both.
void expect_second_partition_reads(const std::string& dir, const std::string& second_subarray) {
    write_aggregation(dir + "/agg.nca",
                      R"({"pmshape": [2], "pmdimensions": ["time"], "Partitions": [)"
                      R"({"index": [0], "location": [[0, 3], [0, 2]], "subarray": {"file": "a.nc", "ncvar": "tas", "shape": [3, 2]}},)"
                      R"({"index": [1], "location": [[3, 6], [0, 2]], "subarray": )" + second_subarray + "}]}");
    auto ds = open_aggregation(dir + "/agg.nca", AggregationOptions{}, agg::DatasetCache::shared());
    const Variable* tas = ds->find_variable("tas");
    ASSERT_NE(tas, nullptr);
    std::vector<float> got(12);
    tas->source->read_linear(0, 12, ByteOrder::Native, got.data());
    const std::vector<float> expected = {0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105};
    EXPECT_EQ(got, expected);
}

}  // namespace

TEST(AggregationDsPartitions, DsPartitionReadsLikeItsNetcdfOriginal) {
    const std::string dir = test::fresh_dir("ds_partitions");
    write_partition(dir + "/a.nc", 0.0f);
    write_partition(dir + "/b.nc", 100.0f);
    write_view_copy(*make_ds_view(netcdf_dataset(dir + "/b.nc"), DsViewOptions{}), dir + "/b.ds");
    expect_second_partition_reads(dir, R"({"file": "b.ds", "format": "ds", "ncvar": "tas", "shape": [3, 2]})");
}

TEST(AggregationNcstreamPartitions, NcstreamPartitionReadsLikeItsNetcdfOriginal) {
    const std::string dir = test::fresh_dir("ncstream_partitions");
    write_partition(dir + "/a.nc", 0.0f);
    write_partition(dir + "/b.nc", 100.0f);
    write_view_copy(*make_ncstream_view(netcdf_dataset(dir + "/b.nc"), "b.ncs"), dir + "/b.ncs");
    ASSERT_EQ(sniff_file(*OpenFile::open(dir + "/b.ncs")), FileFormat::Ncstream);
    expect_second_partition_reads(dir, R"({"file": "b.ncs", "format": "ncstream", "ncvar": "tas", "shape": [3, 2]})");
}
