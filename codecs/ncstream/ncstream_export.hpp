// Writes a dataset as an ncstream file to a descriptor, streaming with bounded
// memory: uncompressed it is exactly the bytes of make_ncstream_view; with a
// deflate level every non-empty payload is a zlib stream (compress = DEFLATE,
// uncompressedSize set), as netcdf-java's writer does for `_Compress`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "codecs/dataset.hpp"

namespace ncafs::ncstream {

// Called after each chunk of payload: uncompressed payload bytes done so far
// and in total (the total is known before the first call).
using ProgressCallback = std::function<void(uint64_t done, uint64_t total)>;

// Largest uncompressed payload of one deflated data message: its zlib stream
// stays below 2^31 bytes even for incompressible data (compressBound).
inline constexpr uint64_t kMaxDeflatedSlabBytes = (uint64_t{1} << 31) - (uint64_t{1} << 20);

struct ExportStats {
    uint64_t bytes_written = 0;
    uint64_t payload_bytes = 0;      // before compression
    uint64_t data_messages = 0;
};

// deflate_level: nullopt = uncompressed; -1 (zlib default) or 0..9.
// `location` goes into Header.location (empty: the dataset's origin).
// Memory use is bounded: payloads are read in chunks of a few MiB; a
// compressed payload larger than 64 MiB is spilled to an unlinked temporary
// file until its length (which precedes it) is known.
// Throws UsageError (bad level, dataset the profile cannot hold), SourceError
// (data cannot be read, write fails).
ExportStats export_ncstream(const Dataset& ds, int out_fd, std::optional<int> deflate_level,
                            const ProgressCallback& progress = {}, const std::string& location = {});

}  // namespace ncafs::ncstream
