// One box of a master array and where its values come from, for the
// reference writer: a run of bytes per chunk in one file (a classic
// variable, a contiguous HDF5 dataset), the HDF5 chunks of one dataset, or
// values computed by the view and stored inline (with the reason the bytes
// of the file cannot be used as they are).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/netcdf/hdf5_variable_storage.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg::kerchunk {

struct ByteRange {
    uint64_t offset = 0;
    uint64_t length = 0;
};

// Elements [first, first + n) of the piece's own C order as one byte range
// of its file, or nullopt when they are not one run there.
using RunFn = std::function<std::optional<ByteRange>(uint64_t first, uint64_t n)>;

struct Piece {
    enum class Kind {
        Runs,    // run(first, n) for each chunk
        Chunks,  // hdf5->chunks, one Zarr chunk each
        Inline,  // the view's values, inline
    };
    Kind kind = Kind::Inline;
    std::vector<uint64_t> start, count;  // box in master index space
    std::string label;                   // "partition /a/b.nc (tas:nca_array Partitions[3])"
    std::string reason;                  // Inline: why the file's bytes are not referenced
    // Inline of values the view converts or computes from a partition: only
    // with --inline-converted. False for data of the aggregation file itself.
    bool converted = false;
    std::string url;         // the file (absolute path or remote URL)
    bool big_endian = true;  // byte order of the file's bytes
    RunFn run;
    std::shared_ptr<const netcdf::Hdf5VariableStorage> hdf5;

    void make_inline(std::string why, bool needs_flag) {
        kind = Kind::Inline;
        reason = std::move(why);
        converted = needs_flag;
        run = nullptr;
        hdf5.reset();
    }
};

}  // namespace ncafs::agg::kerchunk
