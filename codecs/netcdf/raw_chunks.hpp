// Reading the stored (still deflated) bytes of a netCDF-4 variable's chunks
// where the file's survey says they lie (hdf5_survey.hpp: taken by HDF5
// alone, before netcdf-c opened the file), with the partition's confined
// descriptor, so that finding, reading and inflating them - the expensive
// steps - need neither HDF5 nor the library lock, and run on as many cores
// as there are readers. Only the filters decoded here (deflate, shuffle,
// fletcher32, or none) take this path; any other filter leaves the whole
// variable to netcdf-c in a helper; a chunk never written is the fill
// value, one stored without some of its filters (mask bits) is asked of a
// helper. Also: where a contiguous dataset lies (find_contiguous).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codecs/netcdf/chunked_read.hpp"
#include "codecs/netcdf/hdf5_survey.hpp"
#include "codecs/types.hpp"

namespace ncafs::netcdf {

// How one variable's stored chunks decode.
struct RawChunkPlan {
    using Filter = Hdf5Storage::Filter;
    std::string dataset;               // HDF5 path of the variable's dataset
    std::vector<Filter> pipeline;      // in HDF5 pipeline (encoding) order
    size_t shuffle_size = 0;           // element size the shuffle used
    std::vector<uint64_t> declared;    // HDF5 chunk shape (a chunk is stored whole, even at the edge)
    uint64_t declared_bytes = 0;       // one decoded stored chunk
    uint64_t inflated_bytes = 0;       // what deflate gives back (checksums computed before it included)
    NcType type = NcType::Byte;
    bool big_endian = false;           // stored order: swapped to native after decoding
    std::shared_ptr<const Hdf5Storage> storage;  // where the chunks lie
    uint64_t file_size = 0;
};

// The plan of variable `name` of group `group_path` ("/" or "/a/b") from the
// file's survey: nullopt when the variable must stay with netcdf-c (another
// filter, extents other than `shape`, a chunk above max_bytes decoded...).
std::optional<RawChunkPlan> plan_raw_chunks(const Hdf5Survey& survey, const std::string& group_path,
                                            const std::string& name, NcType type, const std::vector<uint64_t>& shape,
                                            uint64_t max_bytes);

// Where the chunk at element offset chunk_start is stored; nullopt for a
// chunk never written (chunk_never_written) or with filter mask bits set. The
// place is checked against the file's size and its size against the plan
// (max_stored_bytes): a survey from a helper process is not trusted.
// Throws SourceError naming `shown`.
std::optional<StoredChunk> locate_chunk(const RawChunkPlan& plan, std::span<const uint64_t> chunk_start,
                                        const std::string& shown);

// Whether the chunk at element offset chunk_start was never written (its
// elements are the fill value); false for one stored, or stored without
// some of its filters. Throws SourceError as locate_chunk does.
bool chunk_never_written(const RawChunkPlan& plan, std::span<const uint64_t> chunk_start, const std::string& shown);

// The contiguous storage of variable `name` of group `group_path` from the
// file's survey, when its element size is that of `type`; else nullopt.
std::optional<Hdf5Contiguous> find_contiguous(const Hdf5Survey& survey, const std::string& group_path,
                                              const std::string& name, NcType type);

// The most stored bytes a chunk of `plan` may hold: its decoded size, an
// eighth more and 1 MiB (deflate never expands more), checksum included.
uint64_t max_stored_bytes(const RawChunkPlan& plan);

// Decodes stored bytes into dst, the chunk's part [0, count) (C order,
// native byte order). Throws std::runtime_error with the reason (corrupt,
// truncated, checksum, a bomb stopped at the chunk's size).
void decode_raw_chunk(const RawChunkPlan& plan, std::span<const uint8_t> stored, std::span<const uint64_t> count,
                      void* dst);

// HDF5's Fletcher-32 of data (H5_checksum_fletcher32).
uint32_t hdf5_fletcher32(std::span<const uint8_t> data);

// Chunks decoded through this path since the process started (tests check
// that the path is taken).
uint64_t raw_chunks_decoded();

}  // namespace ncafs::netcdf
