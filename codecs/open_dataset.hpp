// One entry point for reading any dataset file: CDF-1/2/5 files by magic go to
// the CDF reader (pread at header offsets, file extents for splicing); all
// else goes to netcdf-c (netCDF-4/HDF5 and whatever netcdf-c opens); ds and
// OpenVDS (.vds, "HueDataStore") files by signature to their own readers.
#pragma once

#include <memory>
#include <string>

#include "codecs/dataset.hpp"
#include "io/open_file.hpp"

namespace ncafs {

// Throws SourceError (missing/unreadable) or FormatError (bad header).
Dataset open_dataset(const std::string& path);
// The same for a file already opened (confined): it is read through that fd
// only (netcdf-c through /proc/self/fd/N). With `group` ("/a/b"), the
// dataset of that netCDF-4 group.
Dataset open_dataset(std::shared_ptr<const OpenFile> file, const std::string& group = {});

}  // namespace ncafs
