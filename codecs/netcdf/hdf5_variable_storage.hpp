// Where the values of one netCDF-4 variable lie in its HDF5 file: the
// dataset's layout, its filters as Zarr codecs and, for a chunked dataset,
// the address and stored size of every chunk (H5Dget_chunk_info_by_coord,
// one lookup per chunk of the grid, so a hostile chunk index costs no more
// than the grid, whose size is bounded). Everything read is checked against
// the file: a chunk must lie inside it, an unfiltered chunk must be whole.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/zarr_codec.hpp"

namespace ncafs::netcdf {

struct StoredRun {
    uint64_t address = 0;
    uint64_t size = 0;
    bool written() const { return size > 0; }
};

struct Hdf5VariableStorage {
    enum class Layout { Chunked, Contiguous, Compact, Other } layout = Layout::Other;
    // Why the stored bytes cannot be referenced as they are (a filter
    // without a numcodecs counterpart, a chunk that skipped its filters...).
    std::optional<std::string> unusable;
    bool big_endian = false;
    uint64_t element_size = 0;
    std::vector<uint64_t> dims;   // the dataset's current extent
    std::vector<uint64_t> chunk;  // Chunked: chunk shape
    std::vector<ZarrCodec> filters;
    std::vector<StoredRun> chunks;  // Chunked: C order over the chunk grid; Contiguous: one (unwritten: size 0)
};

// Reads the storage of netCDF variable `variable` of `group` ("" or "/a/b")
// from the HDF5 file HDF5 opens as `hdf5_name` (a /proc/self/fd/N name);
// `shown` names the file in messages, `file_size` bounds every address.
// At most max_chunks chunks (else unusable). Takes the library lock (HDF5
// opens the file: for the export process, not the daemon, whose netCDF-4
// files are read by helpers).
// Throws SourceError when HDF5 cannot open the file or the dataset.
Hdf5VariableStorage read_hdf5_variable_storage(const std::string& hdf5_name, const std::string& shown, const std::string& group,
                              const std::string& variable, uint64_t file_size, uint64_t max_chunks);

}  // namespace ncafs::netcdf
