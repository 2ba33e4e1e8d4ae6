// The fixture of the netCDF-4 chunk tests (decoded_chunk_cache_test,
// raw_chunks_test): the files Suite::kScript writes with h5py and
// netCDF4-python once per suite (in a TMPDIR folder named Suite::kPrefix-*,
// removed after), the process's DecodedChunkCache emptied before each test
// and given its default bound again after the suite.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "codecs/dataset.hpp"
#include "codecs/netcdf/decoded_chunk_cache.hpp"
#include "python_written_files.hpp"

namespace ncafs::test {

template <class Suite>
class ChunkTestSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto folder = write_with_python(Suite::kScript, Suite::kPrefix);
        ASSERT_TRUE(folder) << "netCDF4/h5py could not write";
        dir_ = *folder;
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        netcdf::DecodedChunkCache::shared().set_capacity(netcdf::DecodedChunkCache::kDefaultCapacity);
    }
    void SetUp() override { netcdf::DecodedChunkCache::shared().clear(); }
    static std::string path(const std::string& name) { return dir_ + "/" + name; }
    static const ArraySource& source(const Dataset& ds, const std::string& name) {
        for (const auto& v : ds.variables)
            if (v.name == name) return *v.source;
        throw std::runtime_error("no variable " + name);
    }
    static inline std::string dir_;
};

}  // namespace ncafs::test
