#include "codecs/open_dataset.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "codecs/error.hpp"
#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/ds/ds_reader.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "codecs/vds/vds_reader.hpp"

namespace ncafs {

Dataset open_dataset(const std::string& path) {
    // Fail here with the real reason (ENOENT, EACCES, EMFILE...) rather
    // than let netcdf-c guess at a file we could not even open.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw SourceError(path, std::string("cannot open: ") + std::strerror(errno));
    uint8_t head[16] = {};
    ssize_t n = ::pread(fd, head, sizeof head, 0);
    ::close(fd);
    const std::span<const uint8_t> first(head, n > 0 ? static_cast<size_t>(n) : 0);
    // CDF files by pread (no netcdf-c mutex, file extents for splicing).
    if (cdf::has_cdf_magic(first)) return cdf::open_cdf_dataset(path);
    if (ds::has_ds_signature(first)) return ds::open_ds_dataset(path);
    if (vds::has_vds_signature(first)) return vds::open_vds_dataset(path);
    return netcdf::open_netcdf_dataset(path);
}

}  // namespace ncafs
