// The virtual CDF-1/2/5 file of any Dataset: the header from metadata alone,
// data bytes pulled from each variable's ArraySource on demand, laid out as
// netcdf-c (ncgen -b) lays them out, padding filled with the fill value.
//
// Representability: CDF has one record dimension and only as a variable's
// first dimension. The record dimension is the first unlimited dimension that
// every variable using it has first (and once); any other unlimited dimension
// (e.g. from netCDF-4) becomes a fixed dimension of its current length. A
// fixed dimension of length 0 cannot be stored (0 means "record dimension"):
// UsageError, as is a forced version that cannot hold the dataset.
#pragma once

#include <memory>
#include <optional>

#include "codecs/dataset.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs {

struct CdfViewOptions {
    std::optional<int> version;  // 1, 2 or 5; default: the smallest that holds the dataset
};

std::shared_ptr<const VirtualFile> make_cdf_view(std::shared_ptr<const Dataset> dataset,
                                                 const CdfViewOptions& options);

}  // namespace ncafs
