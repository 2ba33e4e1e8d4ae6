#include "codecs/netcdf/netcdf_dataset.hpp"

#include <netcdf.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "codecs/cdf/header_reader.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "io/worker_pool.hpp"

namespace ncafs::netcdf {

namespace {

std::string nc_message(int status) { return nc_strerror(status); }

// netcdf-c's NC_BYTE..NC_UINT64 equal our type tags 1..11.
bool is_classic_tag(nc_type t) { return t >= NC_BYTE && t <= NC_UINT64; }

// Reads every attribute of varid (NC_GLOBAL for globals); caller holds the mutex.
std::vector<Attribute> read_attributes(int ncid, int varid, const std::string& path, const std::string& owner,
                                       std::vector<std::string>* skipped) {
    int natts = 0;
    if (int s = nc_inq_varnatts(ncid, varid, &natts); s != NC_NOERR)
        throw SourceError(path, "cannot count attributes of " + owner + ": " + nc_message(s));
    std::vector<Attribute> out;
    for (int i = 0; i < natts; ++i) {
        char name[NC_MAX_NAME + 1] = {};
        nc_type xtype = 0;
        size_t len = 0;
        if (int s = nc_inq_attname(ncid, varid, i, name); s != NC_NOERR)
            throw SourceError(path, "cannot read attribute name of " + owner + ": " + nc_message(s));
        if (int s = nc_inq_att(ncid, varid, name, &xtype, &len); s != NC_NOERR)
            throw SourceError(path, "cannot read attribute " + owner + ":" + name + ": " + nc_message(s));
        if (is_classic_tag(xtype)) {
            Attribute a{name, static_cast<NcType>(xtype), {}};
            a.values.resize(len * type_size(a.type));
            if (len > 0)
                if (int s = nc_get_att(ncid, varid, name, a.values.data()); s != NC_NOERR)
                    throw SourceError(path, "cannot read attribute " + owner + ":" + name + ": " + nc_message(s));
            out.push_back(std::move(a));
        } else if (xtype == NC_STRING && len == 1) {
            char* text = nullptr;
            if (int s = nc_get_att_string(ncid, varid, name, &text); s != NC_NOERR)
                throw SourceError(path, "cannot read attribute " + owner + ":" + name + ": " + nc_message(s));
            out.push_back(Attribute::text(name, text ? text : ""));
            nc_free_string(1, &text);
        } else if (skipped) {
            skipped->push_back(path + ": attribute " + owner + ":" + name + " skipped: type " +
                               std::to_string(xtype) + " has no classic netCDF equivalent");
        }
    }
    return out;
}

}  // namespace

std::shared_ptr<const NetcdfHandle> NetcdfHandle::open(const std::string& path, const std::string& shown) {
    const std::string& name = shown.empty() ? path : shown;
    if (shown.empty()) cdf::check_classic_header(path);  // else checked by open(OpenFile)
    std::lock_guard lock(netcdf_library_mutex());
    // Walked before netcdf-c opens it: what a read must refuse is known first.
    int ncid = -1;
    int status = NC_NOERR;
    std::optional<Hdf5Indirections> indirections =
        Hdf5Indirections::check(path, name, [&] { status = nc_open(path.c_str(), NC_NOWRITE, &ncid); });
    if (status != NC_NOERR) throw SourceError(name, "netcdf-c cannot open: " + nc_message(status));
    return std::shared_ptr<const NetcdfHandle>(new NetcdfHandle(ncid, name, std::move(indirections)));
}

std::shared_ptr<const NetcdfHandle> NetcdfHandle::open(std::shared_ptr<const OpenFile> file) {
    cdf::check_classic_header(*file);
    auto opened = open(file->proc_path(), file->path());
    std::const_pointer_cast<NetcdfHandle>(opened)->file_ = std::move(file);  // before anyone else sees it
    return opened;
}

NetcdfHandle::NetcdfHandle(int ncid, std::string path, std::optional<Hdf5Indirections> indirections)
    : ncid_(ncid), path_(std::move(path)), indirections_(std::move(indirections)) {
    static std::atomic<uint64_t> openings{0};
    serial_ = ++openings;
}

DecodedChunkCache::Key NetcdfHandle::chunk_key(int ncid, int varid) const {
    DecodedChunkCache::Key key;
    if (file_) key.file = file_->identity();
    else key.serial = serial_;
    key.group = ncid & 0xffff;  // netcdf-c: the file's id above, the group's below
    key.varid = varid;
    return key;
}

Hdf5ChunkFile* NetcdfHandle::hdf5_chunks() const {
    if (!hdf5_tried_ && file_) hdf5_ = Hdf5ChunkFile::open(*file_);
    hdf5_tried_ = true;
    return hdf5_.get();
}

NetcdfHandle::~NetcdfHandle() {
    std::lock_guard lock(netcdf_library_mutex());
    hdf5_.reset();
    nc_close(ncid_);
}

NetcdfVariableSource::NetcdfVariableSource(std::shared_ptr<const NetcdfHandle> file, int varid, std::string name,
                                           NcType type, std::vector<uint64_t> shape, std::optional<int> group_ncid,
                                           std::optional<std::string> refusal, std::optional<ChunkLayout> chunks,
                                           std::optional<RawChunkPlan> raw)
    : file_(std::move(file)),
      ncid_(group_ncid.value_or(file_->ncid())),
      varid_(varid),
      name_(std::move(name)),
      type_(type),
      shape_(std::move(shape)),
      refusal_(std::move(refusal)),
      chunks_(std::move(chunks)),
      raw_(std::move(raw)) {}

void NetcdfVariableSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                                void* out) const {
    check_box(shape_, start, count, name_.c_str());
    if (refusal_) throw SourceError(file_->path(), *refusal_);  // before HDF5 opens what the file names
    const uint64_t n = ncafs::element_count(count);
    if (n == 0) return;
    read_native(start, count, out);
    file_->check_unchanged();  // after the read: bytes of the version opened, or an error
    if (order == ByteOrder::Big) swap_to_big_endian(type_, out, n);
}

void NetcdfVariableSource::get_vara(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                    void* dst) const {
    std::vector<size_t> s(start.begin(), start.end()), c(count.begin(), count.end());
    // nc_get_vara reads the external type unconverted into native order.
    int status = nc_get_vara(ncid_, varid_, s.data(), c.data(), dst);
    if (status != NC_NOERR) throw SourceError(file_->path(), "cannot read variable " + name_ + ": " + nc_message(status));
}

PendingDecode NetcdfVariableSource::fetch_raw(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                              void* dst) const {
    Hdf5ChunkFile* hdf5 = file_->hdf5_chunks();
    const auto stored = hdf5 ? hdf5->locate(*raw_, start) : std::nullopt;
    if (!stored) get_vara(start, count, dst);  // never written (fill values), or filters skipped
    file_->check_unchanged();                  // only chunks of the version opened are kept
    if (!stored) return {};
    std::vector<uint64_t> extent(count.begin(), count.end()), origin(start.begin(), start.end());
    return [this, at = *stored, extent = std::move(extent), origin = std::move(origin), dst] {
        std::vector<uint8_t> bytes(at.size);
        file_->open_file()->pread_exact(bytes.data(), bytes.size(), at.address);  // checks the identity after
        try {
            decode_raw_chunk(*raw_, bytes, extent, dst);
        } catch (const std::runtime_error& e) {
            std::string where;
            for (uint64_t o : origin) where += (where.empty() ? "" : ",") + std::to_string(o);
            throw SourceError(file_->path(), "variable " + name_ + ", chunk at [" + where + "]: " + e.what());
        }
    };
}

PendingDecode NetcdfVariableSource::fetch(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                          void* dst) const {
    if (raw_) return fetch_raw(start, count, dst);
    get_vara(start, count, dst);
    file_->check_unchanged();  // only chunks of the version opened are kept
    return {};
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
    const uint64_t needed = kAheadChunks * (chunks_->bytes + DecodedChunkCache::kEntryOverhead);
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
                decode_following_chunks(DecodedChunkCache::shared(), self->file_->chunk_key(self->ncid_, self->varid_),
                                        *self->chunks_, self->shape_, type_size(self->type_), missed, kAheadChunks,
                                        netcdf_library_mutex(),
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
    if (!chunks_) {
        std::lock_guard lock(netcdf_library_mutex());
        return get_vara(start, count, out);
    }
    auto& cache = DecodedChunkCache::shared();
    auto missed = read_box_by_chunks(cache, file_->chunk_key(ncid_, varid_), *chunks_, shape_, type_size(type_), start,
                                     count, out, netcdf_library_mutex(),
                                     [&](auto s, auto c, void* dst) { return fetch(s, c, dst); });
    if (missed && raw_) decode_ahead(std::move(*missed));
}

namespace {
Dataset describe_netcdf(std::shared_ptr<const NetcdfHandle> handle, std::vector<std::string>* skipped,
                        const std::string& group);
}  // namespace

Dataset open_netcdf_dataset(const std::string& path, std::vector<std::string>* skipped, const std::string& group) {
    return describe_netcdf(NetcdfHandle::open(path), skipped, group);
}

Dataset open_netcdf_dataset(std::shared_ptr<const OpenFile> file, std::vector<std::string>* skipped,
                            const std::string& group) {
    return describe_netcdf(NetcdfHandle::open(std::move(file)), skipped, group);
}

namespace {

// What the steps of describe_netcdf share (the netCDF library lock held).
struct Describing {
    std::shared_ptr<const NetcdfHandle> handle;
    std::vector<std::string>* skipped;
    std::string group;  // "" for the root group
    int ncid = -1;      // the group described
    Dataset ds;
    std::map<int, size_t> dim_index;  // netCDF dimension id -> index in ds.dimensions

    const std::string& path() const { return handle->path(); }
    [[noreturn]] void fail(const std::string& what, int status) const {
        throw SourceError(ds.origin, what + ": " + nc_message(status));
    }
    // A variable or group left out: a note of the dataset (logged and listed by inspect).
    void skip(const std::string& name, const std::string& why) {
        ds.notes.push_back({false, false, name, why});
        if (skipped) skipped->push_back(path() + ": " + why);
    }
};

// Dimensions of the group (and, for a subgroup, of its ancestors); netCDF-4
// dimension ids need not be 0..n-1. Returns the unlimited dimensions' ids.
std::vector<int> describe_dimensions(Describing& dc, int include_parents) {
    const int ncid = dc.ncid;
    int ndims = 0;
    if (int s = nc_inq_dimids(ncid, &ndims, nullptr, include_parents); s != NC_NOERR) dc.fail("cannot list dimensions", s);
    std::vector<int> dimids(static_cast<size_t>(std::max(ndims, 0)));
    if (ndims > 0)
        if (int s = nc_inq_dimids(ncid, &ndims, dimids.data(), include_parents); s != NC_NOERR)
            dc.fail("cannot list dimensions", s);
    int nunlim = 0;
    if (int s = nc_inq_unlimdims(ncid, &nunlim, nullptr); s != NC_NOERR) dc.fail("cannot list unlimited dims", s);
    std::vector<int> unlimited(static_cast<size_t>(std::max(nunlim, 0)));
    if (nunlim > 0)
        if (int s = nc_inq_unlimdims(ncid, &nunlim, unlimited.data()); s != NC_NOERR)
            dc.fail("cannot list unlimited dims", s);
    for (int id : dimids) {
        char name[NC_MAX_NAME + 1] = {};
        size_t len = 0;
        if (int s = nc_inq_dim(ncid, id, name, &len); s != NC_NOERR) dc.fail("cannot read dimension", s);
        dc.dim_index[id] = dc.ds.dimensions.size();
        dc.ds.dimensions.push_back(Dimension{name, len, false});
    }
    return unlimited;
}

// How the stored chunks of a cached variable decode outside netcdf-c, when
// its filters allow; nullopt leaves it to netcdf-c.
std::optional<RawChunkPlan> raw_chunk_plan(Describing& dc, const Variable& v, const std::vector<uint64_t>& shape) {
    Hdf5ChunkFile* hdf5 = dc.handle->hdf5_chunks();
    if (!hdf5) return std::nullopt;
    size_t len = 0;
    if (nc_inq_grpname_full(dc.ncid, &len, nullptr) != NC_NOERR) return std::nullopt;
    std::string group(len + 1, '\0');
    if (nc_inq_grpname_full(dc.ncid, &len, group.data()) != NC_NOERR) return std::nullopt;
    group.resize(std::strlen(group.c_str()));
    return hdf5->plan(group, v.name, v.type, shape, DecodedChunkCache::shared().largest_entry());
}

// One variable, unless it has no classic equivalent or uses another group's dimension (then skipped).
void describe_variable(Describing& dc, int varid) {
    const int ncid = dc.ncid;
    char name[NC_MAX_NAME + 1] = {};
    nc_type xtype = 0;
    int vndims = 0;
    if (int s = nc_inq_var(ncid, varid, name, &xtype, &vndims, nullptr, nullptr); s != NC_NOERR)
        dc.fail("cannot read variable", s);
    if (!is_classic_tag(xtype)) {
        dc.skip(name, "variable " + std::string(name) + " skipped: type " + std::to_string(xtype) +
                " (string, vlen, compound, opaque or enum) has no classic netCDF equivalent");
        return;
    }
    std::vector<int> vdims(static_cast<size_t>(std::max(vndims, 0)));
    if (vndims > 0)
        if (int s = nc_inq_vardimid(ncid, varid, vdims.data()); s != NC_NOERR) dc.fail("cannot read variable", s);
    Variable v;
    v.name = name;
    v.type = static_cast<NcType>(xtype);
    for (int id : vdims) {
        auto it = dc.dim_index.find(id);
        if (it == dc.dim_index.end()) {  // a dimension of another group: not representable in one root group
            dc.skip(name, "variable " + std::string(name) + " skipped: uses a dimension outside the root group");
            return;
        }
        v.dimids.push_back(it->second);
    }
    v.attributes = read_attributes(ncid, varid, dc.path(), name, dc.skipped);
    std::vector<uint64_t> shape;
    for (size_t id : v.dimids) shape.push_back(dc.ds.dimensions[id].length);
    std::optional<std::string> refusal;
    if (const auto& found = dc.handle->indirections()) refusal = found->refusal(dc.group, v.name);
    if (refusal) dc.ds.notes.push_back({true, true, v.name, *refusal});
    std::optional<ChunkLayout> chunks;
    if (!refusal) chunks = cached_chunk_layout(ncid, varid, type_size(v.type), shape, DecodedChunkCache::shared());
    std::optional<RawChunkPlan> raw;
    if (chunks) raw = raw_chunk_plan(dc, v, shape);
    v.source = std::make_shared<NetcdfVariableSource>(dc.handle, varid, v.name, v.type, std::move(shape), ncid,
                                                      std::move(refusal), std::move(chunks), std::move(raw));
    dc.ds.variables.push_back(std::move(v));
}

// The first unlimited dimension stays unlimited if every variable using it
// has it outermost (what a classic file can express); others become fixed.
void mark_unlimited(Describing& dc, const std::vector<int>& unlimited) {
    for (int id : unlimited) {
        auto it = dc.dim_index.find(id);
        if (it == dc.dim_index.end()) continue;
        bool outermost = true;
        for (const auto& v : dc.ds.variables)
            for (size_t k = 1; k < v.dimids.size(); ++k)
                if (v.dimids[k] == it->second) outermost = false;
        if (outermost) {
            dc.ds.dimensions[it->second].unlimited = true;
            break;
        }
    }
}

// The subgroups of the root group, named in one note (groups are not
// presented); an external link's stand-in group has its own note already.
void note_groups(Describing& dc) {
    constexpr int kNamed = 10;
    int n = 0;
    if (nc_inq_grps(dc.ncid, &n, nullptr) != NC_NOERR || n <= 0) return;
    std::vector<int> ids(static_cast<size_t>(n));
    if (nc_inq_grps(dc.ncid, &n, ids.data()) != NC_NOERR) return;
    std::vector<std::string> names;
    for (int id : ids) {
        char name[NC_MAX_NAME + 1] = {};
        if (nc_inq_grpname(id, name) != NC_NOERR) continue;
        const bool link = std::any_of(dc.ds.notes.begin(), dc.ds.notes.end(),
                                      [&](const DatasetNote& note) { return note.refused && note.name == name; });
        if (!link) names.push_back(name);
    }
    if (names.empty()) return;
    std::string text = "group";
    text += names.size() > 1 ? "s " : " ";
    for (size_t i = 0; i < names.size() && i < kNamed; ++i) text += (i ? ", " : "") + names[i];
    if (names.size() > kNamed) text += " and " + std::to_string(names.size() - kNamed) + " more";
    dc.skip("", text + " left out: only the root group is presented");
}

// The name of HDF5 path `path` ("/g/x") within `group` ("" for the root): "x"
// for a link of that group, else the whole path.
std::string name_in_group(const std::string& path, const std::string& group) {
    const std::string prefix = group.empty() ? "/" : group + "/";
    if (path.rfind(prefix, 0) == 0 && path.find('/', prefix.size()) == std::string::npos)
        return path.substr(prefix.size());
    return path;
}

Dataset describe_netcdf(std::shared_ptr<const NetcdfHandle> handle, std::vector<std::string>* skipped,
                        const std::string& group) {
    Describing dc{handle, skipped, group};
    const std::string& path = handle->path();
    dc.ds.origin = group.empty() ? path : path + ":" + group;

    std::lock_guard lock(netcdf_library_mutex());
    dc.ncid = handle->ncid();
    if (!group.empty())
        if (int s = nc_inq_grp_full_ncid(handle->ncid(), group.c_str(), &dc.ncid); s != NC_NOERR)
            dc.fail("no group " + group, s);
    const std::vector<int> unlimited = describe_dimensions(dc, group.empty() ? 0 : 1);
    dc.ds.attributes = read_attributes(dc.ncid, NC_GLOBAL, path, "global", skipped);
    int nvars = 0;
    if (int s = nc_inq_nvars(dc.ncid, &nvars); s != NC_NOERR) dc.fail("cannot count variables", s);
    std::vector<int> varids(static_cast<size_t>(std::max(nvars, 0)));
    if (nvars > 0)
        if (int s = nc_inq_varids(dc.ncid, &nvars, varids.data()); s != NC_NOERR) dc.fail("cannot list variables", s);
    for (int varid : varids) describe_variable(dc, varid);
    mark_unlimited(dc, unlimited);
    if (const auto& found = handle->indirections())
        for (const auto& f : found->findings())
            if (f.kind == Hdf5IndirectionKind::ExternalLink)
                dc.ds.notes.push_back({true, false, name_in_group(f.path, group),
                                       Hdf5Indirections::describe_link(f)});
    if (group.empty()) note_groups(dc);
    return std::move(dc.ds);
}

}  // namespace

}  // namespace ncafs::netcdf
