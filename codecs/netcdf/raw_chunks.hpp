// Reading the stored (still deflated) bytes of a netCDF-4 variable's chunks
// where HDF5 says they lie (H5Dget_chunk_info_by_coord, the one step under
// the netcdf-c mutex), with the partition's confined descriptor, so that
// reading them from disk and inflating them - the expensive steps - run
// outside the mutex, on as many cores as there are readers.
// Only the filters decoded here (deflate, shuffle, fletcher32) take this
// path; any other filter leaves the whole variable to netcdf-c, and a chunk
// never written (fill values) or stored without some of its filters (mask
// bits) is left to netcdf-c alone.
//
// The HDF5 file is the partition already opened (confined): H5Fopen of its
// /proc/self/fd name, checked to be the same file (device, inode); HDF5
// finds netcdf-c's open file of that inode and shares it, so the file id
// costs no descriptor of its own. Every HDF5 call runs under the netcdf-c
// mutex; the ids are closed before netcdf-c closes the file.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codecs/netcdf/chunked_read.hpp"
#include "codecs/types.hpp"
#include "io/open_file.hpp"

namespace ncafs::netcdf {

// How one variable's stored chunks decode (netcdf-c mutex not needed).
struct RawChunkPlan {
    enum class Filter { Deflate, Shuffle, Fletcher32 };
    std::string dataset;               // HDF5 path of the variable's dataset
    std::vector<Filter> pipeline;      // in HDF5 pipeline (encoding) order
    size_t shuffle_size = 0;           // element size the shuffle used
    std::vector<uint64_t> declared;    // HDF5 chunk shape (a chunk is stored whole, even at the edge)
    uint64_t declared_bytes = 0;       // one decoded stored chunk
    uint64_t inflated_bytes = 0;       // what deflate gives back (checksums computed before it included)
    NcType type = NcType::Byte;
    bool big_endian = false;           // stored order: swapped to native after decoding
};

// A chunk's stored bytes in the file (read with the partition's own
// descriptor, outside the mutex: a cold chunk's disk read holds no one up).
struct StoredChunk {
    uint64_t address = 0;
    uint64_t size = 0;
};

// The HDF5 side of one open netCDF-4 partition (every call: mutex held).
class Hdf5ChunkFile {
public:
    // nullptr when HDF5 cannot open the file or it is not `file` (then the
    // variables are read by netcdf-c as before).
    static std::unique_ptr<Hdf5ChunkFile> open(const OpenFile& file);
    ~Hdf5ChunkFile();
    Hdf5ChunkFile(const Hdf5ChunkFile&) = delete;
    Hdf5ChunkFile& operator=(const Hdf5ChunkFile&) = delete;

    // The plan of variable `name` of group `group_path` ("/" or "/a/b"):
    // nullopt when the variable must stay with netcdf-c (another filter,
    // extents other than `shape`, a chunk above max_bytes decoded...).
    std::optional<RawChunkPlan> plan(const std::string& group_path, const std::string& name, NcType type,
                                     const std::vector<uint64_t>& shape, uint64_t max_bytes);

    // Where the chunk at element offset chunk_start is stored; nullopt for
    // a chunk netcdf-c must read (never written, or filter mask bits set).
    // The place is checked against the file's size and its size against the
    // plan (max_stored_bytes). Throws SourceError naming the file.
    std::optional<StoredChunk> locate(const RawChunkPlan& plan, std::span<const uint64_t> chunk_start);

private:
    Hdf5ChunkFile(hid_t file, std::string shown, uint64_t file_size)
        : file_(file), shown_(std::move(shown)), file_size_(file_size) {}
    hid_t dataset_id(const std::string& path);
    hid_t file_;
    std::string shown_;
    uint64_t file_size_;
    std::map<std::string, hid_t> datasets_;
};

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
