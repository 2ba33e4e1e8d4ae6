// DatasetCache's opens: a fresh path is read before its one fstat
// (OpenFile::open_with_head), a path opened lately is opened and fstat'ed
// alone and served from the cache; either way a file replaced under its
// path, renamed over or rewritten in place, gives its new values. Files by
// ncgen, values as written in their CDL. The capacity bounds the files open
// (counted here, and as /proc/self/fd entries), held by readers or not.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "aggregation/read/dataset_cache.hpp"
#include "codecs/array_source.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

// A classic file holding float v(x) = values, written by ncgen.
void write_classic(const std::string& path, const std::vector<float>& values) {
    std::string data;
    for (float v : values) data += (data.empty() ? "" : ", ") + std::to_string(v);
    const std::string cdl = path + ".cdl";
    std::ofstream(cdl) << "netcdf f {\ndimensions: x = " << values.size() << " ;\nvariables: float v(x) ;\ndata: v = "
                       << data << " ;\n}\n";
    ASSERT_EQ(std::system(("ncgen -k nc3 -o " + path + " " + cdl).c_str()), 0);
}

std::vector<float> values_of(const Dataset& ds) {
    const Variable* v = ds.find_variable("v");
    if (!v) return {};
    std::vector<float> out(v->source->element_count());
    v->source->read_linear(0, out.size(), ByteOrder::Native, out.data());
    return out;
}

TEST(DatasetCache, APathOpenedAgainIsCachedAndAReplacedFileIsNot) {
    const std::string dir = test::fresh_dir("dataset-cache");
    const std::string path = dir + "/p.nc";
    write_classic(path, {1, 2});
    agg::DatasetCache cache(4);
    auto first = cache.get(path);  // fresh: open, pread, fstat
    EXPECT_EQ(values_of(*first), (std::vector<float>{1, 2}));
    EXPECT_EQ(cache.get(path), first);  // opened lately: open, fstat, the cached dataset
    EXPECT_EQ(cache.opens(), 1u);

    write_classic(dir + "/new.nc", {3, 4, 5});
    ASSERT_EQ(std::rename((dir + "/new.nc").c_str(), path.c_str()), 0);
    auto renamed = cache.get(path);
    EXPECT_EQ(values_of(*renamed), (std::vector<float>{3, 4, 5}));

    write_classic(dir + "/other.nc", {6, 7, 8, 9});
    std::ifstream in(dir + "/other.nc", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;  // in place: the same inode
    EXPECT_EQ(values_of(*cache.get(path)), (std::vector<float>{6, 7, 8, 9}));
    EXPECT_EQ(cache.opens(), 3u);
}

size_t descriptors_open() {
    size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d)) ++n;
        ::closedir(d);
    }
    return n;
}

TEST(DatasetCache, TheCapacityBoundsTheFilesOpenHeldOrNot) {
    const std::string dir = test::fresh_dir("dataset-cache-bound");
    std::vector<std::string> paths;
    for (int i = 0; i < 12; ++i) {
        paths.push_back(dir + "/p" + std::to_string(i) + ".nc");
        write_classic(paths.back(), {float(i)});
    }
    const size_t before = descriptors_open();
    agg::DatasetCache cache(4);
    std::vector<std::shared_ptr<const Dataset>> held;
    for (int i = 0; i < 3; ++i) held.push_back(cache.get(paths[i]));  // in use, then dropped from the cache below
    for (int i = 3; i < 12; ++i) {
        EXPECT_EQ(values_of(*cache.get(paths[i])), (std::vector<float>{float(i)}));
        EXPECT_LE(cache.files_open(), 4u) << "after opening " << paths[i];
        EXPECT_LE(descriptors_open(), before + 4) << "after opening " << paths[i];
    }
    for (int i = 0; i < 3; ++i) EXPECT_EQ(values_of(*held[i]), (std::vector<float>{float(i)}));  // still readable

    // Files in use at once may pass the bound; once let go they close.
    held.clear();
    for (int i = 0; i < 12; ++i) held.push_back(cache.get(paths[i]));
    EXPECT_EQ(cache.files_open(), 12u);
    held.clear();
    EXPECT_LE(cache.files_open(), 4u);
    EXPECT_LE(descriptors_open(), before + 4);
}

}  // namespace
