#include "codecs/open_dataset.hpp"

#include <unistd.h>

#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/ds/ds_reader.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "codecs/vds/vds_reader.hpp"

namespace ncafs {

Dataset open_dataset(const std::string& path) {
    // Fail here with the real reason (ENOENT, EACCES, EMFILE, a FIFO...)
    // rather than let netcdf-c guess at a file we could not even open.
    return open_dataset(OpenFile::open(path));
}

Dataset open_dataset(std::shared_ptr<const OpenFile> file, const std::string& group) {
    if (!group.empty()) return netcdf::open_netcdf_dataset(std::move(file), nullptr, group);
    uint8_t head[16] = {};
    ssize_t n = ::pread(file->fd(), head, sizeof head, 0);
    const std::span<const uint8_t> first(head, n > 0 ? static_cast<size_t>(n) : 0);
    // CDF files by pread (no netcdf-c mutex, file extents for splicing).
    if (cdf::has_cdf_magic(first)) return cdf::open_cdf_dataset(std::move(file));
    if (ds::has_ds_signature(first)) return ds::open_ds_dataset(std::move(file));
    if (vds::has_vds_signature(first)) return vds::open_vds_dataset(std::move(file));
    return netcdf::open_netcdf_dataset(std::move(file));
}

}  // namespace ncafs
