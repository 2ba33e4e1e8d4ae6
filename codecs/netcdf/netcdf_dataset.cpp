#include "codecs/netcdf/netcdf_dataset.hpp"

#include <algorithm>
#include <bit>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <thread>

#include "codecs/cdf/header_reader.hpp"
#include "codecs/checked_math.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/helper_timing.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_helpers.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "codecs/netcdf/stored_deflated_chunks.hpp"
#include "io/worker_pool.hpp"
#include "io/system_call_error.hpp"

namespace ncafs::netcdf {

namespace {

// The netcdf-c handles open now, by file identity: a file is open once.
struct IdentityKey {
    dev_t device;
    ino_t inode;
    int64_t mtime_ns;
    uint64_t size;
    int64_t ctime_ns;
    explicit IdentityKey(const FileIdentity& id)
        : device(id.device), inode(id.inode), mtime_ns(id.mtime_ns), size(id.size), ctime_ns(id.ctime_ns) {}
    auto operator<=>(const IdentityKey&) const = default;
};
std::map<IdentityKey, std::weak_ptr<const NetcdfHandle>> open_handles NCAFS_GUARDED_BY(library_mutex);
// Signalled when a handle has closed its file (and left open_handles).
std::condition_variable_any handle_closed;

// The handle open on `id`, if any; waits while one is being closed (its
// last owner gone, its nc_close not yet made), so that the file is never
// open twice.
std::shared_ptr<const NetcdfHandle> open_handle_of(const FileIdentity& id) NCAFS_REQUIRES(library_mutex) {
    for (;;) {
        auto it = open_handles.find(IdentityKey(id));
        if (it == open_handles.end()) return nullptr;
        if (auto alive = it->second.lock()) return alive;
        handle_closed.wait(library_mutex);
    }
}

}  // namespace

void NetcdfHandle::register_handle(const FileIdentity& id, const std::shared_ptr<const NetcdfHandle>& handle) {
    open_handles[IdentityKey(id)] = handle;
    std::const_pointer_cast<NetcdfHandle>(handle)->registered_ = id;  // before anyone else sees it
}

std::shared_ptr<const NetcdfHandle> NetcdfHandle::open(const std::string& path, const std::string& shown) {
    const std::string& name = shown.empty() ? path : shown;
    if (shown.empty()) cdf::check_classic_header(path);  // else checked by open(OpenFile)
    const std::optional<FileIdentity> identity = identity_of(path);
    LibraryLock lock;
    if (identity)
        if (auto same = open_handle_of(*identity)) return same;
    auto survey = Hdf5Survey::take(path, name, identity ? identity->size : 0);  // closed again
    helper_timing::mark("surveyed");
    auto opened = open_surveyed(path, name, std::move(survey), nullptr);
    if (identity) register_handle(*identity, opened);
    return opened;
}

std::shared_ptr<const NetcdfHandle> NetcdfHandle::open(std::shared_ptr<const OpenFile> file) {
    cdf::check_classic_header(*file);
    LibraryLock lock;
    if (auto same = open_handle_of(file->identity())) return same;
    auto survey = Hdf5Survey::take(file->proc_path(), file->path(), file->size());
    // The version surveyed, still: a file rewritten since is not handed to
    // netcdf-c unread (what remains is the time of nc_open).
    file->check_unchanged();
    const FileIdentity identity = file->identity();
    // Named before the call: its arguments may be evaluated in any order
    // (g++ moves `file` out first), so none may read `file` there.
    const std::string proc_path = file->proc_path(), shown = file->path();
    auto opened = open_surveyed(proc_path, shown, std::move(survey), std::move(file));
    register_handle(identity, opened);
    return opened;
}

std::shared_ptr<const NetcdfHandle> NetcdfHandle::open_surveyed(const std::string& path, const std::string& shown,
                                                                std::optional<Hdf5Survey> survey,
                                                                std::shared_ptr<const OpenFile> file) {
    int ncid = -1;
    if (int status = nc_open(path.c_str(), NC_NOWRITE, &ncid); status != NC_NOERR)  // a positive status is an errno
        throw_source_error(shown, "netcdf-c cannot open: " + nc_message(status), status > 0 ? status : 0);
    helper_timing::mark("nc_opened");
    std::shared_ptr<NetcdfHandle> opened(new NetcdfHandle(ncid, shown, std::move(survey)));
    opened->file_ = std::move(file);
    return opened;
}

NetcdfHandle::NetcdfHandle(int ncid, std::string path, std::optional<Hdf5Survey> survey)
    : ncid_(ncid), path_(std::move(path)), survey_(std::move(survey)) {}

NetcdfHandle::~NetcdfHandle() {
    {
        LibraryLock lock;
        nc_close(ncid_);
        if (registered_)
            if (auto it = open_handles.find(IdentityKey(*registered_)); it != open_handles.end() && it->second.expired())
                open_handles.erase(it);
    }
    handle_closed.notify_all();
}

namespace {

// The group `group` ("" for the root) of the file netcdf-c holds as ncid.
int group_ncid(int ncid, const std::string& group, const std::string& shown) NCAFS_REQUIRES(library_mutex) {
    int id = ncid;
    if (!group.empty())
        if (int status = nc_inq_grp_full_ncid(ncid, group.c_str(), &id); status != NC_NOERR)
            throw SourceError(shown, "no group " + group + ": " + nc_message(status));
    return id;
}

// Whether a dimension after the first of variable varid of group gid is
// unlimited, in its group or a group above it.
bool has_inner_unlimited(int gid, int varid) NCAFS_REQUIRES(library_mutex) {
    std::vector<int> unlimited;
    for (int g = gid, parent = 0;; g = parent) {
        int n = 0;
        if (nc_inq_unlimdims(g, &n, nullptr) == NC_NOERR && n > 0) {
            std::vector<int> ids(static_cast<size_t>(n));
            if (nc_inq_unlimdims(g, &n, ids.data()) == NC_NOERR) unlimited.insert(unlimited.end(), ids.begin(), ids.end());
        }
        if (nc_inq_grp_parent(g, &parent) != NC_NOERR) break;  // the root has none
    }
    int ndims = 0;
    if (nc_inq_varndims(gid, varid, &ndims) != NC_NOERR || ndims < 2 || ndims > NC_MAX_VAR_DIMS) return false;
    std::vector<int> dims(static_cast<size_t>(ndims));
    if (nc_inq_vardimid(gid, varid, dims.data()) != NC_NOERR) return false;
    return std::any_of(dims.begin() + 1, dims.end(),
                       [&](int d) { return std::find(unlimited.begin(), unlimited.end(), d) != unlimited.end(); });
}

// nc_get_vara of a box of variable varid of group gid into out: the
// external type unconverted, native order. netcdf-c 4.9.0 lays out a box
// wrongly when it passes the variable's HDF5 extent in a dimension after the
// first (an unlimited dimension there, longer than the variable was
// written): values shifted, the rest fill or bytes never written. A box of
// one row (count 1 but in the last dimension) comes out right, so such a
// variable is read a row at a time.
void get_vara(int gid, int varid, std::span<const uint64_t> start, std::span<const uint64_t> count, void* out,
              const std::string& shown) NCAFS_REQUIRES(library_mutex) {
    const size_t rank = start.size();
    std::vector<size_t> s(start.begin(), start.end()), c(count.begin(), count.end());
    const bool by_rows = rank >= 2 && has_inner_unlimited(gid, varid);
    if (by_rows) std::fill(c.begin(), c.end() - 1, 1);
    const uint64_t elements = by_rows ? count[rank - 1] : ncafs::element_count(count);
    size_t row_bytes = 0;
    if (by_rows) {
        nc_type type = 0;
        if (nc_inq_var(gid, varid, nullptr, &type, nullptr, nullptr, nullptr) != NC_NOERR || type < NC_BYTE ||
            type > NC_UINT64)
            throw SourceError(shown, "variable " + std::to_string(varid) + " is not of a classic type");
        row_bytes = elements * type_size(static_cast<NcType>(type));
    }
    for (auto* at = static_cast<uint8_t*>(out);; at += row_bytes) {
        if (int status = nc_get_vara(gid, varid, s.data(), c.data(), at); status != NC_NOERR)
            throw SourceError(shown, "cannot read variable " + std::to_string(varid) + ": " + nc_message(status));
        size_t d = by_rows ? rank - 1 : 0;  // the next row: an odometer over the dimensions before the last
        while (d > 0 && ++s[d - 1] == start[d - 1] + count[d - 1]) s[d - 1] = start[d - 1], --d;
        if (d == 0) return;
    }
}

// netcdf-c in this process: where no helpers run, and in a helper itself.
class InProcessValues final : public NetcdfValueReader {
public:
    InProcessValues(std::shared_ptr<const NetcdfHandle> handle, std::string group)
        : handle_(std::move(handle)), group_(std::move(group)) {}
    void read(int varid, std::span<const uint64_t> start, std::span<const uint64_t> count,
              std::span<uint8_t> out) const override {
        LibraryLock lock;
        get_vara(group_ncid(handle_->ncid(), group_, handle_->path()), varid, start, count, out.data(), handle_->path());
    }

private:
    std::shared_ptr<const NetcdfHandle> handle_;
    std::string group_;
};

// A fresh helper per box (netcdf_helpers.hpp).
class HelperValues final : public NetcdfValueReader {
public:
    HelperValues(std::shared_ptr<const OpenFile> file, std::string group)
        : file_(std::move(file)), group_(std::move(group)) {}
    void read(int varid, std::span<const uint64_t> start, std::span<const uint64_t> count,
              std::span<uint8_t> out) const override {
        values_in_helper(*file_, group_, varid, start, count, out);
    }

private:
    std::shared_ptr<const OpenFile> file_;
    std::string group_;
};

// Calls visit with sub-boxes of [start, start + count) of at most `cap`
// bytes, each contiguous in C order over the whole box (its place there
// given): the dimensions before `d` have a count of 1.
template <class Visit>
void split_box(std::vector<uint64_t>& start, std::vector<uint64_t>& count, size_t d, uint64_t esize, uint64_t cap,
               uint8_t* out, const Visit& visit) {
    uint64_t inner = esize;
    for (size_t k = d + 1; k < count.size(); ++k) inner *= count[k];
    if (d >= count.size() || inner * count[d] <= cap) return visit(start, count, out);
    const uint64_t first = start[d], n = count[d];
    if (inner <= cap) {
        const uint64_t step = cap / inner;
        for (uint64_t i = 0; i < n; i += step) {
            start[d] = first + i, count[d] = std::min(step, n - i);
            visit(start, count, out + i * inner);
        }
    } else {
        for (uint64_t i = 0; i < n; ++i) {
            start[d] = first + i, count[d] = 1;
            split_box(start, count, d + 1, esize, cap, out + i * inner, visit);
        }
    }
    start[d] = first, count[d] = n;
}

}  // namespace

NetcdfVariableSource::NetcdfVariableSource(std::shared_ptr<const OpenFile> file,
                                           std::shared_ptr<const NetcdfValueReader> values, DecodedChunkCache::Key key,
                                           int varid, std::string name, NcType type, std::vector<uint64_t> shape,
                                           NetcdfStorage storage)
    : file_(std::move(file)),
      values_(std::move(values)),
      key_(std::move(key)),
      varid_(varid),
      name_(std::move(name)),
      type_(type),
      shape_(std::move(shape)),
      storage_(std::move(storage)) {}

void NetcdfVariableSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                                void* out) const {
    check_box(shape_, start, count, name_.c_str());
    if (storage_.refusal) throw SourceError(file_->path(), *storage_.refusal);  // before anything opens what the file names
    const uint64_t n = ncafs::element_count(count);
    if (n == 0) return;
    read_native(start, count, out);
    file_->check_unchanged();  // after the read: bytes of the version opened, or an error
    if (order == ByteOrder::Big) swap_to_big_endian(type_, out, n);
}

void NetcdfVariableSource::fill(uint64_t elements, uint8_t* out) const {
    const size_t esize = storage_.fill.size();
    for (uint64_t i = 0; i < elements; ++i) std::memcpy(out + i * esize, storage_.fill.data(), esize);
}

void NetcdfVariableSource::ask_values(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                      uint8_t* out) const {
    std::vector<uint64_t> s(start.begin(), start.end()), c(count.begin(), count.end());
    const uint64_t esize = type_size(type_);
    split_box(s, c, 0, esize, kMaxHelperBoxBytes, out, [&](const auto& bs, const auto& bc, uint8_t* dst) {
        values_->read(varid_, bs, bc, {dst, static_cast<size_t>(ncafs::element_count(bc) * esize)});
    });
}

void NetcdfVariableSource::read_contiguous(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                           uint8_t* out) const {
    const Hdf5Contiguous& c = *storage_.contiguous;
    const size_t esize = type_size(type_), rank = shape_.size();
    const uint64_t n = ncafs::element_count(count);
    if (c.at.size == 0) {
        if (storage_.fill.empty()) return ask_values(start, count, out);  // never written, fill unknown
        return fill(n, out);
    }
    const auto end = checked::add(c.at.address, c.at.size);
    if (c.at.size != ncafs::element_count(shape_) * esize || !end || *end > file_->size())
        throw SourceError(file_->path(), "variable " + name_ + ": its data lies beyond the end of the file");
    // Runs: the innermost dimensions the box covers whole, and the first it does not.
    size_t outer = rank;
    uint64_t run = 1;
    while (outer > 0) {
        --outer;
        run *= count[outer];
        if (count[outer] != shape_[outer]) break;
    }
    std::vector<uint64_t> at(start.begin(), start.end());
    for (uint64_t done = 0; done < n; done += run) {
        uint64_t offset = 0;  // the run's first element in the variable, C order
        for (size_t d = 0; d < rank; ++d) offset = offset * shape_[d] + at[d];
        file_->pread_exact(out + done * esize, run * esize, c.at.address + offset * esize);
        size_t d = outer;  // the next run: the dimensions before `outer` advance
        while (d-- > 0) {
            if (++at[d] < start[d] + count[d]) break;
            at[d] = start[d];
        }
    }
    if (c.big_endian != (std::endian::native == std::endian::big))
        for (uint64_t i = 0; i < n; ++i) std::reverse(out + i * esize, out + (i + 1) * esize);
}

std::shared_ptr<const DeflatedChunks> NetcdfVariableSource::deflated_chunks(std::string* why) const {
    if (!storage_.raw || storage_.refusal) return nullptr;
    return stored_deflated_chunks(*storage_.raw, file_, storage_.fill, why);
}

PendingDecode NetcdfVariableSource::fetch_raw(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                              void* dst) const {
    const RawChunkPlan& raw = *storage_.raw;
    const auto stored = locate_chunk(raw, start, file_->path());
    if (!stored) {
        if (!storage_.fill.empty() && chunk_never_written(raw, start, file_->path())) {
            fill(ncafs::element_count(count), static_cast<uint8_t*>(dst));
            return {};
        }
        return fetch_values(start, count, dst);  // stored without some of its filters
    }
    std::vector<uint64_t> extent(count.begin(), count.end()), origin(start.begin(), start.end());
    return [this, at = *stored, extent = std::move(extent), origin = std::move(origin), dst] {
        std::vector<uint8_t> bytes(at.size);
        file_->pread_exact(bytes.data(), bytes.size(), at.address);  // checks the identity after
        try {
            decode_raw_chunk(*storage_.raw, bytes, extent, dst);
        } catch (const std::runtime_error& e) {
            std::string where;
            for (uint64_t o : origin) where += (where.empty() ? "" : ",") + std::to_string(o);
            throw SourceError(file_->path(), "variable " + name_ + ", chunk at [" + where + "]: " + e.what());
        }
    };
}

PendingDecode NetcdfVariableSource::fetch_values(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                                 void* dst) const {
    std::vector<uint64_t> s(start.begin(), start.end()), c(count.begin(), count.end());
    return [this, s = std::move(s), c = std::move(c), dst] { ask_values(s, c, static_cast<uint8_t*>(dst)); };
}

PendingDecode NetcdfVariableSource::fetch(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                          void* dst) const {
    if (storage_.raw) return fetch_raw(start, count, dst);
    return fetch_values(start, count, dst);
}

namespace {

// Chunks one decode-ahead job decodes, and such jobs at once in the process:
// one core's worth beside the readers, never a queue of speculative work.
constexpr size_t kAheadChunks = 8;
std::atomic<unsigned> ahead_jobs{0};

unsigned ahead_job_limit() { return std::max(1u, std::thread::hardware_concurrency() / 2); }

}  // namespace

void NetcdfVariableSource::decode_ahead(std::vector<uint64_t> missed) const {
    auto& cache = DecodedChunkCache::shared();
    const uint64_t needed = kAheadChunks * (storage_.chunks->bytes + DecodedChunkCache::kEntryOverhead);
    if (cache.capacity() < cache.weight() + needed) return;  // would evict what readers may need
    if (ahead_jobs.fetch_add(1) >= ahead_job_limit()) {
        --ahead_jobs;
        return;
    }
    // Weak: a dataset closed meanwhile is not kept open for speculative work.
    std::weak_ptr<const NetcdfVariableSource> weak = weak_from_this();
    auto job = [weak, missed = std::move(missed)] {
        if (auto self = weak.lock()) {
            try {
                decode_following_chunks(DecodedChunkCache::shared(), self->key_, *self->storage_.chunks, self->shape_,
                                        type_size(self->type_), missed, kAheadChunks,
                                        [&](auto s, auto c, void* dst) { return self->fetch(s, c, dst); });
            } catch (const std::exception&) {
                // The reader that needs the chunk meets the error itself.
            }
        }
        --ahead_jobs;
    };
    if (!WorkerPool::shared().post(job, [] { --ahead_jobs; })) --ahead_jobs;
}

void NetcdfVariableSource::read_native(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                       void* out) const {
    auto* dst = static_cast<uint8_t*>(out);
    if (storage_.contiguous) return read_contiguous(start, count, dst);
    if (!storage_.chunks) return ask_values(start, count, dst);
    auto missed = read_box_by_chunks(DecodedChunkCache::shared(), key_, *storage_.chunks, shape_, type_size(type_),
                                     start, count, out,
                                     [&](auto s, auto c, void* chunk) { return fetch(s, c, chunk); });
    if (missed && storage_.raw && !ForwardReaderScope::active()) decode_ahead(std::move(*missed));
}

namespace {

// What a group's Dataset is built from.
struct Described {
    std::shared_ptr<const OpenFile> file;
    std::optional<Hdf5Survey> survey;
    NetcdfDescription description;
    std::shared_ptr<const NetcdfValueReader> values;
};

// The description of `group` of `file`: a helper's where they run (netcdf-c
// never opens the file here), else netcdf-c's in this process.
Described describe_file(std::shared_ptr<const OpenFile> file, const std::string& group) {
    cdf::check_classic_header(*file);  // a malformed classic header: our parser's error, no library's
    if (netcdf_helpers_started() && file->fd() >= 0) {
        HelperDescription found = describe_in_helper(*file, group);
        auto values = std::make_shared<HelperValues>(file, group);
        return {std::move(file), std::move(found.survey), std::move(found.description), std::move(values)};
    }
    auto handle = NetcdfHandle::open(file);
    NetcdfDescription description;
    {
        LibraryLock lock;
        description = describe_group(handle->ncid(), handle->survey(), group, file->path());
    }
    std::optional<Hdf5Survey> survey;
    if (handle->survey()) survey = *handle->survey();
    auto values = std::make_shared<InProcessValues>(handle, group);
    return {std::move(file), std::move(survey), std::move(description), std::move(values)};
}

// Every item of the description counted against the metadata budget
// before anything of it is built (a helper's answer claims them).
void charge_description(const Described& d) {
    const NetcdfDescription& desc = d.description;
    uint64_t attributes = desc.attributes.size(), bytes = 0;
    for (const auto& a : desc.attributes) bytes += a.values.size() + a.name.size();
    for (const auto& v : desc.variables) {
        attributes += v.attributes.size();
        for (const auto& a : v.attributes) bytes += a.values.size() + a.name.size();
    }
    charge_metadata(desc.dimensions.size(), sizeof(Dimension) + kNameCost, "dimensions");
    charge_metadata(desc.variables.size(), sizeof(Variable) + kVariableCost, "variables");
    charge_metadata(attributes, sizeof(Attribute) + kNameCost, "attributes");
    charge_metadata(bytes, 1, "bytes of attribute names and values");
    charge_metadata(desc.notes.size() + desc.skipped.size(), sizeof(DatasetNote) + kNameCost, "notes");
    uint64_t positions = 0;
    if (d.survey)
        for (const auto& [path, s] : d.survey->storage) positions += s->chunks.size();
    charge_metadata(positions, sizeof(StoredChunk), "chunk index entries");
}

// The layout of a variable asked of helpers without chunks worth keeping
// (compact, contiguous not surveyed, chunks too small or too large): boxes
// of the variable's C order that each fill one cache entry at most, so
// that the kernel's small reads cost one helper per box, not per read.
std::optional<ChunkLayout> helper_layout(const std::vector<uint64_t>& shape, size_t esize,
                                         const DecodedChunkCache& cache) {
    const uint64_t room = largest_kept_chunk(cache);
    if (shape.empty() || room == 0) return std::nullopt;  // nothing kept: each read asks for its box
    std::vector<uint64_t> lengths(shape.begin(), shape.end());
    for (size_t d = 0; d < lengths.size(); ++d) {
        uint64_t inner = esize;
        for (size_t k = d + 1; k < lengths.size(); ++k) inner = checked::mul(inner, lengths[k]).value_or(UINT64_MAX);
        if (inner <= room) {
            lengths[d] = std::clamp<uint64_t>(room / inner, 1, std::max<uint64_t>(lengths[d], 1));
            break;
        }
        lengths[d] = 1;
    }
    return chunk_layout_of(lengths, esize, shape, 1, room);
}

// How variable v (of `shape`) is stored, as far as ncafs reads it itself.
NetcdfStorage storage_of(const Described& d, const VariableDescription& v, const std::vector<uint64_t>& shape) {
    NetcdfStorage s;
    s.refusal = v.refusal;
    s.fill = v.fill;
    if (s.refusal) return s;
    auto& cache = DecodedChunkCache::shared();
    const size_t esize = type_size(v.type);
    const std::string& group = d.description.group_path;
    // Chunks decoded here are read chunk by chunk even when too large to keep.
    const uint64_t kept = largest_kept_chunk(cache), decoded = std::max(kept, kLargestDecodedChunk);
    if (d.survey && !v.chunk_lengths.empty())
        s.raw = plan_raw_chunks(*d.survey, group, v.name, v.type, shape, decoded);
    if (s.raw) s.chunks = chunk_layout_of(v.chunk_lengths, esize, shape, 1, decoded);
    if (!s.chunks) s.raw.reset();
    if (!s.chunks && !v.chunk_lengths.empty())  // asked of a helper a chunk at a time, kept
        s.chunks = chunk_layout_of(v.chunk_lengths, esize, shape, kSmallestCachedChunk, kept);
    if (d.survey && v.chunk_lengths.empty()) s.contiguous = find_contiguous(*d.survey, group, v.name, v.type);
    if (!s.chunks && !s.contiguous) s.chunks = helper_layout(shape, esize, cache);
    return s;
}

Dataset build_dataset(Described d, std::vector<std::string>* skipped) {
    charge_description(d);
    NetcdfDescription& desc = d.description;
    Dataset ds;
    const std::string& path = d.file->path();
    ds.origin = desc.group.empty() ? path : path + ":" + desc.group;
    ds.notes = std::move(desc.notes);
    if (skipped)
        for (const std::string& line : desc.skipped) skipped->push_back(path + ": " + line);
    ds.dimensions = std::move(desc.dimensions);
    ds.attributes = std::move(desc.attributes);
    for (VariableDescription& v : desc.variables) {
        std::vector<uint64_t> shape;
        for (size_t id : v.dimids) {
            if (id >= ds.dimensions.size()) throw SourceError(path, "variable " + v.name + " of a dimension not described");
            shape.push_back(ds.dimensions[id].length);
        }
        DecodedChunkCache::Key key;
        key.file = d.file->identity();
        key.group = desc.group_id;
        key.varid = v.varid;
        NetcdfStorage storage = storage_of(d, v, shape);
        Variable out{v.name, v.type, std::move(v.dimids), std::move(v.attributes), nullptr};
        out.source = std::make_shared<NetcdfVariableSource>(d.file, d.values, std::move(key), v.varid, v.name, v.type,
                                                            std::move(shape), std::move(storage));
        ds.variables.push_back(std::move(out));
    }
    return ds;
}

}  // namespace

Dataset open_netcdf_dataset(const std::string& path, std::vector<std::string>* skipped, const std::string& group) {
    return open_netcdf_dataset(OpenFile::open(path), skipped, group);
}

Dataset open_netcdf_dataset(std::shared_ptr<const OpenFile> file, std::vector<std::string>* skipped,
                            const std::string& group) {
    return build_dataset(describe_file(std::move(file), group), skipped);
}

bool any_variable_has_attributes(std::shared_ptr<const OpenFile> file,
                                 const std::vector<std::vector<std::string>>& sets) {
    const Described d = describe_file(std::move(file), "");
    for (const auto& v : d.description.variables)
        for (const auto& set : sets)
            if (std::all_of(set.begin(), set.end(), [&](const std::string& name) {
                    return std::any_of(v.attributes.begin(), v.attributes.end(),
                                       [&](const Attribute& a) { return a.name == name; });
                }))
                return true;
    return false;
}

std::optional<Hdf5Indirections> indirections_before_open(const OpenFile& file, const std::vector<char>& image) {
    std::optional<Hdf5Survey> survey;
    if (netcdf_helpers_started() && file.fd() >= 0) {
        survey = survey_in_helper(file);
    } else {
        LibraryLock lock;
        survey = image.empty() ? Hdf5Survey::take(file.proc_path(), file.path(), file.size())
                               : Hdf5Survey::take_image(image, file.path());
    }
    return survey ? std::move(survey->indirections) : std::nullopt;
}

HelperDescription survey_and_describe(const std::string& path, const std::string& shown, const std::string& group) {
    auto handle = NetcdfHandle::open(path, shown);
    LibraryLock lock;
    NetcdfDescription description = describe_group(handle->ncid(), handle->survey(), group, shown);
    std::optional<Hdf5Survey> survey;
    if (handle->survey()) survey = *handle->survey();
    return {std::move(survey), std::move(description)};
}

std::vector<uint8_t> read_values_here(const std::string& path, const std::string& shown, const std::string& group,
                                      int varid, std::span<const uint64_t> start, std::span<const uint64_t> count) {
    LibraryLock lock;
    int ncid = -1;
    if (int status = nc_open(path.c_str(), NC_NOWRITE, &ncid); status != NC_NOERR)  // a positive status is an errno
        throw_source_error(shown, "netcdf-c cannot open: " + nc_message(status), status > 0 ? status : 0);
    struct Close {
        int ncid;
        ~Close() NCAFS_NO_THREAD_SAFETY_ANALYSIS { nc_close(ncid); }  // under the caller's lock
    } close{ncid};
    const int gid = group_ncid(ncid, group, shown);
    nc_type type = 0;
    int rank = 0;
    if (nc_inq_var(gid, varid, nullptr, &type, &rank, nullptr, nullptr) != NC_NOERR || type < NC_BYTE ||
        type > NC_UINT64 || static_cast<size_t>(rank) != count.size())
        throw SourceError(shown, "no variable " + std::to_string(varid) + " of a classic type and this rank");
    std::optional<uint64_t> bytes = type_size(static_cast<NcType>(type));
    for (uint64_t n : count)
        if (bytes) bytes = checked::mul(*bytes, n);
    if (!bytes || *bytes > kMaxHelperBoxBytes) throw SourceError(shown, "a box too large for one netCDF-4 helper");
    std::vector<uint8_t> out(*bytes);
    get_vara(gid, varid, start, count, out.data(), shown);
    return out;
}

}  // namespace ncafs::netcdf
