// The one format dispatcher: every reader of a dataset file, chosen by its
// first bytes (codecs/sniff.hpp), for the daemon (fs/backend.cpp) and for
// the fragments of aggregations alike. CDF-1/2/5 files go to the CDF reader
// (pread at header offsets, file extents for splicing); ds, ncstream and
// OpenVDS (.vds, "HueDataStore") files by signature to their own readers;
// all else to netcdf-c (netCDF-4/HDF5 and whatever netcdf-c opens). Its own
// library, ncafs_formats, above the readers' libraries (codecs/CMakeLists.txt).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "codecs/dataset.hpp"
#include "io/open_file.hpp"

namespace ncafs {

// The first bytes open_dataset reads of a local file (the sniff and a
// classic header in one read). A file opened by OpenFile::open_with_head
// with this limit is not read again: its head is taken instead.
inline constexpr size_t kDatasetHeadBytes = 64 * 1024;

// Throws SourceError (missing/unreadable) or FormatError (bad header).
Dataset open_dataset(const std::string& path);
// The same for a file already opened (confined): it is read through that fd
// only (netcdf-c through /proc/self/fd/N). With `group` ("/a/b"), the
// dataset of that netCDF-4 group.
Dataset open_dataset(std::shared_ptr<const OpenFile> file, const std::string& group = {});

}  // namespace ncafs
