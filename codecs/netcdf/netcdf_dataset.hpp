// Reader for any file netcdf-c can open (netCDF-4/HDF5, CDF-1/2/5, ...):
// one group's dimensions, attributes and variables of the eleven classic
// types, built from the group's description (netcdf_description.hpp) that
// a helper process read (netcdf_helpers.hpp), or netcdf-c in this process
// where no helpers run (unit tests, the helpers themselves). Values are
// read by ncafs itself where it can (stored chunks, contiguous data, fill
// values), else asked of a helper.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/dataset.hpp"
#include "codecs/netcdf/chunked_read.hpp"
#include "codecs/netcdf/netcdf_helpers.hpp"
#include "codecs/netcdf/hdf5_indirection.hpp"
#include "codecs/netcdf/raw_chunks.hpp"
#include "codecs/netcdf/netcdf_description.hpp"
#include "io/open_file.hpp"

namespace ncafs::netcdf {

// An open netcdf-c handle; nc_close on destruction (under the library lock).
// A file is open once in netcdf-c at a time: a second open of a file still
// open (same identity) returns the handle already open, since HDF5 shares
// one open file between such opens and closing one under the other is not
// safe. HDF5 itself reads the file only before netcdf-c opens it (the
// survey, hdf5_survey.hpp), in a helper process when they are started
// (netcdf_helpers.hpp).
class NetcdfHandle {
public:
    // Throws SourceError naming the path and netcdf-c's message, or the
    // reason an HDF5 file is refused whole (hdf5_indirection.hpp). `shown`:
    // the name for messages when path is another name of it (/proc/self/fd/N).
    // Surveys the file in this process (the tests', the helpers').
    static std::shared_ptr<const NetcdfHandle> open(const std::string& path, const std::string& shown = {});
    // Opens `file` through its /proc/self/fd name and keeps it: reads check
    // its identity after netcdf-c has read (a file rewritten in place gives
    // an error, not a mixture or stale chunks). Surveys it in this process:
    // where helpers run, only they open files (open_netcdf_dataset).
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
    // What the HDF5 walk found before netcdf-c opened the file (nullptr for
    // a file that is not HDF5, or when the test-only switch disables it).
    const Hdf5Indirections* indirections() const {
        return survey_ && survey_->indirections ? &*survey_->indirections : nullptr;
    }
    // The survey taken before netcdf-c opened the file (nullptr: not HDF5).
    const Hdf5Survey* survey() const { return survey_ ? &*survey_ : nullptr; }
    // The file opened (confined), or nullptr when opened by name.
    const OpenFile* open_file() const { return file_.get(); }

private:
    NetcdfHandle(int ncid, std::string path, std::optional<Hdf5Survey> survey);
    static std::shared_ptr<const NetcdfHandle> open_surveyed(const std::string& path, const std::string& shown,
                                                             std::optional<Hdf5Survey> survey,
                                                             std::shared_ptr<const OpenFile> file)
        NCAFS_REQUIRES(library_mutex);
    // Keeps `handle` as the one open on `id` (until it closes).
    static void register_handle(const FileIdentity& id, const std::shared_ptr<const NetcdfHandle>& handle)
        NCAFS_REQUIRES(library_mutex);
    int ncid_;
    std::string path_;
    std::optional<Hdf5Survey> survey_;
    std::shared_ptr<const OpenFile> file_;
    std::optional<FileIdentity> registered_;  // its key among the handles open (library lock)
};

// netcdf-c's values of the variables of one group, for what ncafs does not
// read itself: read by a helper, or by netcdf-c here where none run.
class NetcdfValueReader {
public:
    virtual ~NetcdfValueReader() = default;
    // The box [start, start + count) of variable varid into out (native
    // order, C order over the box; out.size() its bytes). Throws SourceError.
    virtual void read(int varid, std::span<const uint64_t> start, std::span<const uint64_t> count,
                      std::span<uint8_t> out) const = 0;
};

// How one variable's values are stored, as far as ncafs reads them itself.
struct NetcdfStorage {
    std::optional<std::string> refusal;      // every read fails with it (hdf5_indirection.hpp)
    std::optional<ChunkLayout> chunks;       // read through the DecodedChunkCache (chunked_read.hpp)
    std::optional<RawChunkPlan> raw;         // stored chunks decoded by ncafs (raw_chunks.hpp)
    std::optional<Hdf5Contiguous> contiguous;  // one run of the file, read by pread
    std::vector<uint8_t> fill;               // one element (native order); empty: unknown
};

// The values of one variable in its own external type (no scale/offset, no
// conversion), swapped to the requested byte order: stored chunks read and
// inflated here (no lock), contiguous data by pread, never-written chunks
// from the fill value; everything else asked of the group's
// NetcdfValueReader, a chunk at a time when the variable has a layout.
// Never answers with file extents.
class NetcdfVariableSource final : public ArraySource, public std::enable_shared_from_this<NetcdfVariableSource> {
public:
    NetcdfVariableSource(std::shared_ptr<const OpenFile> file, std::shared_ptr<const NetcdfValueReader> values,
                         DecodedChunkCache::Key key, int varid, std::string name, NcType type,
                         std::vector<uint64_t> shape, NetcdfStorage storage);
    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    std::optional<std::string> refusal() const override { return storage_.refusal; }
    // The stored chunks as they lie, where raw_chunks.hpp reads them (stored_deflated_chunks.hpp).
    std::shared_ptr<const DeflatedChunks> deflated_chunks(std::string* why) const override;
    // Whether missed chunks are read and inflated here (raw_chunks.hpp).
    bool reads_raw_chunks() const { return storage_.raw.has_value(); }
    // Whether its values are read from one run of the file, here.
    bool reads_contiguous() const { return storage_.contiguous.has_value(); }

private:
    void read_native(std::span<const uint64_t> start, std::span<const uint64_t> count, void* out) const;
    void read_contiguous(std::span<const uint64_t> start, std::span<const uint64_t> count, uint8_t* out) const;
    // The box from the value reader, in boxes of at most kMaxHelperBoxBytes.
    void ask_values(std::span<const uint64_t> start, std::span<const uint64_t> count, uint8_t* out) const;
    void fill(uint64_t elements, uint8_t* out) const;
    PendingDecode fetch_raw(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst) const;
    // The chunk asked of the value reader, on the worker pool.
    PendingDecode fetch_values(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst) const;
    PendingDecode fetch(std::span<const uint64_t> start, std::span<const uint64_t> count, void* dst) const;
    // After a miss at chunk `missed`: the following chunks decoded on the
    // worker pool, while the cache has room for them without evicting.
    void decode_ahead(std::vector<uint64_t> missed) const;
    std::shared_ptr<const OpenFile> file_;
    std::shared_ptr<const NetcdfValueReader> values_;
    DecodedChunkCache::Key key_;
    int varid_;
    std::string name_;
    NcType type_;
    std::vector<uint64_t> shape_;
    NetcdfStorage storage_;
};

// Describes the root group of the file at `path`. Variables (and
// attributes) of non-classic types (string, vlen, compound, opaque, enum) are
// skipped; one line per skipped item is appended to *skipped when given.
// A single-valued string attribute is kept as char text (netCDF-4 writers such
// as xarray store Conventions/units that way). The first unlimited dimension
// that every variable using it has outermost stays unlimited; further unlimited dimensions (netCDF-4 allows several, a
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
// The same for a file already opened (confined): a helper (or netcdf-c
// here, where none run) opens it through its /proc/self/fd name, never by
// its path again. Every item is charged to the metadata budget
// (io/metadata_budget.hpp) before it is built.
Dataset open_netcdf_dataset(std::shared_ptr<const OpenFile> file, std::vector<std::string>* skipped = nullptr,
                            const std::string& group = {});

// Whether some root-group variable of `file` has every attribute of one of
// `sets` (any type), from its description (a helper's, where they run);
// throws SourceError when it cannot be read.
bool any_variable_has_attributes(std::shared_ptr<const OpenFile> file,
                                 const std::vector<std::vector<std::string>>& sets);

// The indirections of an HDF5 file about to be opened by netcdf-c
// elsewhere (term variables of aggregation files): from a helper process
// when they are started, else from HDF5 here, on `image` (the file's
// bytes, a separate HDF5 file) when not empty, else on the file. nullopt
// for a file that is not HDF5. Throws SourceError naming the file.
std::optional<Hdf5Indirections> indirections_before_open(const OpenFile& file, const std::vector<char>& image);

}  // namespace ncafs::netcdf
