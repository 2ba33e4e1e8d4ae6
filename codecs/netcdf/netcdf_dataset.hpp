// Reader for any file netcdf-c can open (netCDF-4/HDF5, CDF-1/2/5, ...):
// the root group's dimensions, attributes and variables of the eleven classic
// types, each variable backed by a NetcdfVariableSource (nc_get_vara under the
// netcdf-c mutex).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/dataset.hpp"
#include "codecs/netcdf/chunked_read.hpp"
#include "codecs/netcdf/hdf5_indirection.hpp"
#include "codecs/netcdf/raw_chunks.hpp"
#include "io/open_file.hpp"

namespace ncafs::netcdf {

// An open netcdf-c handle; nc_close on destruction (under the mutex).
class NetcdfHandle {
public:
    // Throws SourceError naming the path and netcdf-c's message, or the
    // reason an HDF5 file is refused whole (hdf5_indirection.hpp). `shown`:
    // the name for messages when path is another name of it (/proc/self/fd/N).
    static std::shared_ptr<const NetcdfHandle> open(const std::string& path, const std::string& shown = {});
    // Opens `file` through its /proc/self/fd name and keeps it: reads check
    // its identity after netcdf-c has read (a file rewritten in place gives
    // an error, not a mixture or stale chunks).
    static std::shared_ptr<const NetcdfHandle> open(std::shared_ptr<const OpenFile> file);
    ~NetcdfHandle();
    NetcdfHandle(const NetcdfHandle&) = delete;
    NetcdfHandle& operator=(const NetcdfHandle&) = delete;

    int ncid() const { return ncid_; }
    const std::string& path() const { return path_; }
    // Throws SourceError when the file opened (when kept) changed.
    void check_unchanged() const {
        if (file_) file_->check_unchanged();
    }
    // What the HDF5 walk found before netcdf-c opened the file (nullopt for
    // a file that is not HDF5, or when the test-only switch disables it).
    const std::optional<Hdf5Indirections>& indirections() const { return indirections_; }
    // The DecodedChunkCache key of variable varid of group ncid (chunk left
    // empty): the file's identity when kept, else this opening alone.
    DecodedChunkCache::Key chunk_key(int ncid, int varid) const;
    // The HDF5 file id reading this file's stored chunks (raw_chunks.hpp),
    // opened at the first ask; nullptr for a file not kept (opened by
    // name) or one HDF5 will not open. netcdf-c mutex held.
    Hdf5ChunkFile* hdf5_chunks() const;
    // The file opened (confined), or nullptr when opened by name.
    const OpenFile* open_file() const { return file_.get(); }

private:
    NetcdfHandle(int ncid, std::string path, std::optional<Hdf5Indirections> indirections);
    int ncid_;
    std::string path_;
    std::optional<Hdf5Indirections> indirections_;
    std::shared_ptr<const OpenFile> file_;
    uint64_t serial_;  // unique per opening
    mutable std::unique_ptr<Hdf5ChunkFile> hdf5_;  // closed before nc_close
    mutable bool hdf5_tried_ = false;
};

// The values of one root-group variable, read with nc_get_vara in its own
// external type (no scale/offset, no conversion), swapped to the requested
// byte order. Never answers with file extents (netcdf-c owns the layout).
class NetcdfVariableSource final : public ArraySource, public std::enable_shared_from_this<NetcdfVariableSource> {
public:
    // group_ncid: the group holding the variable (the file's root by default).
    // refusal: why every read fails before netcdf-c is asked (HDF5 external
    // storage or virtual layout: hdf5_indirection.hpp). chunks: the layout
    // of a variable read through the DecodedChunkCache (chunked_read.hpp);
    // raw: how its stored chunks decode outside netcdf-c (raw_chunks.hpp).
    NetcdfVariableSource(std::shared_ptr<const NetcdfHandle> file, int varid, std::string name, NcType type,
                         std::vector<uint64_t> shape, std::optional<int> group_ncid = std::nullopt,
                         std::optional<std::string> refusal = std::nullopt,
                         std::optional<ChunkLayout> chunks = std::nullopt,
                         std::optional<RawChunkPlan> raw = std::nullopt);
    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    std::optional<std::string> refusal() const override { return refusal_; }
    // Whether missed chunks are read and inflated outside netcdf-c (raw_chunks.hpp).
    bool reads_raw_chunks() const { return raw_.has_value(); }

private:
    void read_native(std::span<const uint64_t> start, std::span<const uint64_t> count, void* out) const;
    // nc_get_vara of the box into dst (native order); netcdf-c mutex held.
    void get_vara(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst) const;
    // FetchChunk of a variable with a raw plan (netcdf-c mutex held).
    PendingDecode fetch_raw(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst) const;
    PendingDecode fetch(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst) const;
    // After a miss at chunk `missed`: the following chunks decoded on the
    // worker pool, while the cache has room for them without evicting.
    void decode_ahead(std::vector<uint64_t> missed) const;
    std::shared_ptr<const NetcdfHandle> file_;
    int ncid_;
    int varid_;
    std::string name_;
    NcType type_;
    std::vector<uint64_t> shape_;
    std::optional<std::string> refusal_;
    std::optional<ChunkLayout> chunks_;
    std::optional<RawChunkPlan> raw_;
};

// Opens path with netcdf-c and describes its root group. Variables (and
// attributes) of non-classic types (string, vlen, compound, opaque, enum) are
// skipped; one line per skipped item is appended to *skipped when given.
// A single-valued string attribute is kept as char text (netCDF-4 writers such
// as xarray store Conventions/units that way). The first unlimited dimension
// stays unlimited; further unlimited dimensions (netCDF-4 allows several, a
// classic file only one) are presented as fixed at their current length.
// With `group` ("/a/b"), describes that group instead: its variables and
// attributes, and every dimension visible from it (its own and its
// ancestors'), so that a fragment variable inside a group can be read.
// A variable with HDF5 external storage or a virtual layout stays listed but
// its source refuses every read; that and every external link (never
// followed) give a refused note in Dataset::notes.
// Throws SourceError when the file cannot be opened or read.
Dataset open_netcdf_dataset(const std::string& path, std::vector<std::string>* skipped = nullptr,
                            const std::string& group = {});
// The same for a file already opened (confined): netcdf-c opens it through
// its /proc/self/fd name, never by its path again.
Dataset open_netcdf_dataset(std::shared_ptr<const OpenFile> file, std::vector<std::string>* skipped = nullptr,
                            const std::string& group = {});

}  // namespace ncafs::netcdf
