// What ncafs itself needs to know of a netCDF-4 (HDF5) file, read in ONE
// open of it by HDF5 alone, closed again before netcdf-c opens the file:
// the indirection check (hdf5_indirection.hpp); for every chunked dataset
// whose filters ncafs decodes (deflate, shuffle, fletcher32, or none), its
// storage: filters, stored type, extents and where each chunk lies; for
// every contiguous dataset without filters, where its bytes lie. Reads of
// those then need neither HDF5 nor the library lock (raw_chunks.hpp).
// HDF5 never holds a file a second time while netcdf-c holds it: two opens
// of one file share HDF5's state, and closing one while the other converts a
// variable-length fill value used freed memory (a crash).
// A survey is values only (no HDF5 id): a helper process takes it
// (netcdf_helpers.hpp) and sends it to the daemon (survey_wire.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/netcdf/hdf5_indirection.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "codecs/types.hpp"

namespace ncafs::netcdf {

// Where a chunk's stored bytes lie; size 0: never written (address 0: the
// fill value), or stored without some of its filters (address
// kPartlyFilteredChunk: netcdf-c reads it, in a helper).
struct StoredChunk {
    uint64_t address = 0;
    uint64_t size = 0;
};
inline constexpr uint64_t kPartlyFilteredChunk = ~uint64_t{0};

// A contiguous dataset without filters: its bytes lie in one run of the
// file (size 0: never written, its elements are the fill value).
struct Hdf5Contiguous {
    uint64_t type_size = 0;  // stored element size (integer, float or 1-byte text)
    bool big_endian = false;
    StoredChunk at;
};

// The stored chunks of one dataset whose filters ncafs decodes (or none).
struct Hdf5Storage {
    enum class Filter : uint8_t { Deflate, Shuffle, Fletcher32 };
    std::vector<Filter> pipeline;  // in HDF5 pipeline (encoding) order
    uint64_t shuffle_size = 0;     // element size the shuffle used
    uint64_t type_size = 0;        // stored element size (integer, float or 1-byte text)
    bool big_endian = false;
    std::vector<uint64_t> dims;    // the dataset's extents
    std::vector<uint64_t> chunk;   // declared chunk shape (a chunk is stored whole, even at the edge)
    std::vector<StoredChunk> chunks;  // C order over the chunk grid
};

struct Hdf5Survey {
    // nullopt with the test-only switch that disables the check.
    std::optional<Hdf5Indirections> indirections;
    std::map<std::string, std::shared_ptr<const Hdf5Storage>> storage;  // by HDF5 path ("/g/x")
    std::map<std::string, Hdf5Contiguous> contiguous;                   // by HDF5 path
    uint64_t file_size = 0;

    // Opens `path` (e.g. /proc/self/fd/N) with HDF5 once, walks it and
    // closes it. nullopt for a file that is not HDF5 (a classic one).
    // Throws SourceError naming `shown` for an HDF5 file it cannot walk.
    static std::optional<Hdf5Survey> take(const std::string& path, const std::string& shown, uint64_t file_size)
        NCAFS_REQUIRES(library_mutex);
    // The same of a file's bytes in memory (an HDF5 file of its own, which
    // shares nothing with an open of the file itself).
    static std::optional<Hdf5Survey> take_image(const std::vector<char>& image, const std::string& shown)
        NCAFS_REQUIRES(library_mutex);
};

// Chunk positions a survey indexes in all, at most: a dataset that would
// pass them is left to netcdf-c, in a helper (its chunks read through HDF5).
inline constexpr uint64_t kMaxSurveyedChunks = uint64_t{1} << 20;

}  // namespace ncafs::netcdf
