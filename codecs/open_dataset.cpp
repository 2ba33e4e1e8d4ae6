#include "codecs/open_dataset.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "codecs/netcdf/netcdf_dataset.hpp"

namespace ncafs {

bool has_cdf_magic(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    unsigned char magic[4] = {};
    ssize_t n = ::pread(fd, magic, 4, 0);
    ::close(fd);
    return n == 4 && magic[0] == 'C' && magic[1] == 'D' && magic[2] == 'F' &&
           (magic[3] == 1 || magic[3] == 2 || magic[3] == 5);
}

Dataset open_dataset(const std::string& path) {
    // TODO(cdf): switch CDF files to ncafs::cdf::open_cdf_dataset once
    // codecs/cdf/cdf_dataset.hpp lands; netcdf-c reads them correctly meanwhile.
    return netcdf::open_netcdf_dataset(path);
}

}  // namespace ncafs
