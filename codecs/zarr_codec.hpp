// A codec a chunk's stored bytes went through, as Zarr names it: what the
// HDF5 filters of a netCDF-4 variable become when its chunks are referenced
// as they lie (codecs/netcdf/hdf5_variable_storage.hpp), and what
// `ncafs export --format kerchunk` writes (aggregation/kerchunk_export/).
#pragma once

#include <cstdint>

namespace ncafs {

struct ZarrCodec {
    enum class Id { Zlib, Shuffle } id = Id::Zlib;
    int level = 0;              // zlib
    uint32_t element_size = 1;  // shuffle
    bool operator==(const ZarrCodec&) const = default;
};

}  // namespace ncafs
