#include "aggregation/terms/term_variables.hpp"

#include <netcdf.h>
#include <netcdf_mem.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "io/open_file.hpp"

namespace ncafs::agg {

namespace {

// A term variable describes fragments, one element each: far fewer than this.
constexpr uint64_t kMaxTermElements = uint64_t{1} << 28;

std::string nc_message(int s) { return nc_strerror(s); }

bool is_classic_numeric(nc_type t) { return t >= NC_BYTE && t <= NC_UINT64 && t != NC_CHAR; }

// Text of a char or single-string attribute; nullopt otherwise. Caller holds the mutex.
std::optional<std::string> text_att(int gid, int varid, const char* name) {
    nc_type t = 0;
    size_t len = 0;
    if (nc_inq_att(gid, varid, name, &t, &len) != NC_NOERR) return std::nullopt;
    if (t == NC_CHAR) {
        std::string s(len, '\0');
        if (len > 0 && nc_get_att_text(gid, varid, name, s.data()) != NC_NOERR) return std::nullopt;
        return s;
    }
    if (t == NC_STRING && len >= 1) {
        std::vector<char*> v(len, nullptr);
        if (nc_get_att_string(gid, varid, name, v.data()) != NC_NOERR) return std::nullopt;
        std::string s = v[0] ? v[0] : "";
        nc_free_string(len, v.data());
        return s;
    }
    return std::nullopt;
}

// Numeric attribute values as doubles (empty when absent or text).
std::vector<double> numeric_att(int gid, int varid, const char* name) {
    nc_type t = 0;
    size_t len = 0;
    if (nc_inq_att(gid, varid, name, &t, &len) != NC_NOERR || !is_classic_numeric(t) || len == 0 || len > 1024)
        return {};
    std::vector<double> v(len);
    if (nc_get_att_double(gid, varid, name, v.data()) != NC_NOERR) return {};
    return v;
}

// Strips what pads a fixed-width char string: NULs, the variable's fill char, blanks.
std::string_view unpad(std::string_view s, std::optional<char> fill) {
    auto pad = [&](char c) { return c == '\0' || c == ' ' || (fill && c == *fill); };
    if (size_t end = s.find('\0'); end != std::string_view::npos) s = s.substr(0, end);
    while (!s.empty() && pad(s.back())) s.remove_suffix(1);
    return s;
}

// The CDF magic of netCDF classic files (CDF-1, -2, -5); false when unreadable.
bool is_classic_file(const OpenFile& file, uint64_t size) {
    char magic[3] = {};
    if (size < sizeof magic) return false;
    try {
        file.pread_exact(magic, sizeof magic, 0);
    } catch (const SourceError&) {
        return false;
    }
    return std::memcmp(magic, "CDF", sizeof magic) == 0;
}

}  // namespace

uint64_t TermArray::size() const {
    uint64_t n = 1;
    for (uint64_t s : shape) n *= s;
    return n;
}

std::optional<std::string_view> TermArray::text_at(uint64_t i) const {
    if (i >= text_end.size() || masked[i]) return std::nullopt;
    const uint64_t begin = i ? text_end[i - 1] : 0;
    return std::string_view(text_bytes).substr(begin, text_end[i] - begin);
}

std::optional<int64_t> TermArray::integer_at(uint64_t i) const {
    if (i >= ints.size() || masked[i]) return std::nullopt;
    return ints[i];
}

const uint8_t* TermArray::raw_at(uint64_t i) const {
    if (!numeric_type || i >= masked.size() || masked[i]) return nullptr;
    return bytes.data() + i * type_size(*numeric_type);
}

std::optional<std::string> TermArray::text_attribute(const std::string& name) const {
    for (const auto& [k, v] : text_attributes)
        if (k == name) return v;
    return std::nullopt;
}

TermFile::TermFile(const std::string& path, const ConfinedRoots* within) : path_(path) {
    // netcdf-c 4.9.0 + HDF5: a second nc_open of a file that is already open
    // (the dataset cache holds it) makes string reads fail with "HDF error"
    // while a third file is open. An in-memory image is a separate HDF5
    // file, so aggregation files up to kMaxImage are read from a copy.
    // Classic files (CDF magic) do not go through HDF5 and are read in
    // place: a copy of a million fragments' names would only add to the peak.
    constexpr std::uintmax_t kMaxImage = std::uintmax_t{256} << 20;
    auto file = OpenFile::open(path, within);  // O_NONBLOCK, regular files only: a FIFO cannot hang us
    const uint64_t size = file->size();
    if (!is_classic_file(*file, size) && size > 0 && size <= kMaxImage) {
        image_.resize(static_cast<size_t>(size));
        try {
            file->pread_exact(image_.data(), image_.size(), 0);
        } catch (const SourceError&) {
            image_.clear();
        }
    }
    std::lock_guard lock(netcdf_library_mutex());
    indirections_ = netcdf::Hdf5Indirections::check(file->proc_path(), path);  // before netcdf-c opens it
    int s = image_.empty() ? nc_open(file->proc_path().c_str(), NC_NOWRITE, &ncid_)
                           : nc_open_mem(path.c_str(), NC_NOWRITE, image_.size(), image_.data(), &ncid_);
    if (s != NC_NOERR) {
        ncid_ = -1;
        throw SourceError(path, "netcdf-c cannot open: " + nc_message(s));
    }
}

TermFile::~TermFile() {
    if (ncid_ < 0) return;
    std::lock_guard lock(netcdf_library_mutex());
    nc_close(ncid_);
}

std::optional<std::string> TermFile::find(const std::string& name_in) const {
    if (name_in.empty()) return std::nullopt;
    // CF group search for a variable named by a root-group variable: absolute
    // paths as given, relative paths from the root group (the referring
    // variable's group, which is always the root here: the Dataset model
    // only carries root variables).
    std::string full = name_in[0] == '/' ? name_in : "/" + name_in;
    auto slash = full.rfind('/');
    std::string group = slash == 0 ? "/" : full.substr(0, slash);
    std::string var = full.substr(slash + 1);
    if (var.empty()) return std::nullopt;
    std::lock_guard lock(netcdf_library_mutex());
    int gid = ncid_;
    if (group != "/" && nc_inq_grp_full_ncid(ncid_, group.c_str(), &gid) != NC_NOERR) return std::nullopt;
    int varid = -1;
    if (nc_inq_varid(gid, var.c_str(), &varid) != NC_NOERR) return std::nullopt;
    return full;
}

namespace {

// One term variable being read (the netCDF library lock held): where it is, how to fail.
struct TermVar {
    const std::string& path;  // the aggregation file
    const std::string& full;  // "/group/name"
    int gid = -1, varid = -1;
    SourceError fail(const std::string& reason) const { return SourceError(path, "variable " + full + ": " + reason); }
};

// Dimensions (names, lengths) and text attributes; the element count, bounded.
uint64_t read_term_header(const TermVar& tv, const std::vector<int>& dimids, TermArray& out) {
    for (int id : dimids) {
        char name[NC_MAX_NAME + 1] = {};
        size_t len = 0;
        if (int s = nc_inq_dim(tv.gid, id, name, &len); s != NC_NOERR) throw tv.fail(nc_message(s));
        out.dims.push_back(name);
        out.shape.push_back(len);
    }
    int natts = 0;
    nc_inq_varnatts(tv.gid, tv.varid, &natts);
    for (int i = 0; i < natts; ++i) {
        char name[NC_MAX_NAME + 1] = {};
        if (nc_inq_attname(tv.gid, tv.varid, i, name) != NC_NOERR) continue;
        if (auto t = text_att(tv.gid, tv.varid, name)) out.text_attributes.emplace_back(name, *t);
    }
    uint64_t total = 1;
    for (uint64_t s : out.shape) {
        if (s != 0 && total > kMaxTermElements / s) throw tv.fail("too many elements for a term variable");
        total *= s;
    }
    if (total > kMaxTermElements) throw tv.fail("too many elements for a term variable");
    return total;
}

// Appends one text element (masked: missing).
void push_text(TermArray& out, std::string_view v, bool masked) {
    if (!masked) out.text_bytes.append(v);
    out.text_end.push_back(out.text_bytes.size());
    out.masked.push_back(masked);
}

// NC_STRING values; empty, _FillValue and missing_value strings are missing.
// Read in slabs along the first dimension: netcdf-c allocates one string
// per element, so a million of them at once would double the peak.
void read_string_values(const TermVar& tv, uint64_t total, TermArray& out) {
    out.is_text = true;
    auto fill = text_att(tv.gid, tv.varid, "_FillValue");
    auto missing = text_att(tv.gid, tv.varid, "missing_value");
    out.text_end.reserve(total);
    out.masked.reserve(total);
    if (total == 0) return;
    const size_t rank = out.shape.size();
    const uint64_t row = rank == 0 ? 1 : total / out.shape[0];  // elements per index of the first dimension
    const uint64_t rows_per_slab = std::max<uint64_t>(1, (uint64_t{1} << 16) / std::max<uint64_t>(row, 1));
    const uint64_t nrows = rank == 0 ? 1 : out.shape[0];
    std::vector<size_t> start(rank, 0), count(out.shape.begin(), out.shape.end());
    std::vector<char*> values;
    for (uint64_t r = 0; r < nrows; r += rows_per_slab) {
        const uint64_t n = std::min(rows_per_slab, nrows - r);
        if (rank > 0) start[0] = r, count[0] = n;
        values.assign(n * row, nullptr);
        if (int s = nc_get_vara_string(tv.gid, tv.varid, start.data(), count.data(), values.data()); s != NC_NOERR)
            throw tv.fail(nc_message(s));
        for (char* p : values) {
            const std::string_view v = p ? std::string_view(p) : std::string_view();
            push_text(out, v, !p || v.empty() || (fill && v == *fill) || (missing && v == *missing));
        }
        nc_free_string(values.size(), values.data());
    }
}

// NC_CHAR values, netCDF-3 storage: the last dimension is the string length.
void read_char_values(const TermVar& tv, uint64_t total, TermArray& out) {
    out.is_text = true;
    uint64_t width = 1;
    if (!out.shape.empty()) {
        width = out.shape.back();
        out.shape.pop_back();
        out.dims.pop_back();
    }
    std::optional<char> fill_char;
    if (auto f = text_att(tv.gid, tv.varid, "_FillValue"); f && !f->empty()) fill_char = (*f)[0];
    auto missing = text_att(tv.gid, tv.varid, "missing_value");
    std::string bytes(total, '\0');
    if (total > 0)
        if (int s = nc_get_var_text(tv.gid, tv.varid, bytes.data()); s != NC_NOERR) throw tv.fail(nc_message(s));
    const uint64_t n = width == 0 ? 0 : total / width;
    const std::string missing_text = missing ? std::string(unpad(*missing, fill_char)) : std::string();
    out.text_end.reserve(n);
    out.masked.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        const std::string_view v = unpad(std::string_view(bytes).substr(i * width, width), fill_char);
        push_text(out, v, v.empty() || (missing && v == missing_text));
    }
    if (width == 0) {  // zero-width strings: every element missing
        out.text_end.assign(out.size(), 0);
        out.masked.assign(out.size(), true);
    }
}

// Numeric values: raw bytes and, for integer types, exact integers; masked elements are empty.
void read_numeric_values(const TermVar& tv, nc_type xtype, uint64_t total, TermArray& out) {
    if (!is_classic_numeric(xtype)) throw tv.fail("has a type (" + std::to_string(xtype) + ") a term variable cannot have");
    const NcType type = static_cast<NcType>(xtype);
    out.numeric_type = type;
    const size_t esize = type_size(type);
    out.bytes.resize(total * esize);
    if (total > 0)
        if (int s = nc_get_var(tv.gid, tv.varid, out.bytes.data()); s != NC_NOERR) throw tv.fail(nc_message(s));
    // Masking as netCDF4-python does: _FillValue, else the default fill; plus missing_value.
    std::vector<double> masks = numeric_att(tv.gid, tv.varid, "_FillValue");
    if (masks.empty()) masks.push_back(default_fill_as_double(type));
    for (double m : numeric_att(tv.gid, tv.varid, "missing_value")) masks.push_back(m);
    const bool integer = is_integer_type(type);
    if (integer && total > 0) {
        std::vector<long long> ints(total);
        // Exact for every integer type but uint64 beyond int64 (range error: masked below).
        int s = nc_get_var_longlong(tv.gid, tv.varid, ints.data());
        if (s != NC_NOERR && s != NC_ERANGE) throw tv.fail(nc_message(s));
        out.ints.assign(ints.begin(), ints.end());
    }
    out.masked.assign(total, false);
    for (uint64_t i = 0; i < total; ++i) {
        double v = element_as_double(type, out.bytes.data(), i);
        for (double m : masks)
            if (v == m || (v != v && m != m)) out.masked[i] = true;
    }
}

}  // namespace

TermArray TermFile::read(const std::string& full) const {
    auto slash = full.rfind('/');
    std::string group = slash == 0 ? "/" : full.substr(0, slash);
    std::string var = full.substr(slash + 1);
    TermVar tv{path_, full};
    if (indirections_)
        if (auto why = indirections_->refusal(group, var)) throw SourceError(path_, *why);

    std::lock_guard lock(netcdf_library_mutex());
    tv.gid = ncid_;
    if (group != "/" && nc_inq_grp_full_ncid(ncid_, group.c_str(), &tv.gid) != NC_NOERR) throw tv.fail("no such group");
    if (nc_inq_varid(tv.gid, var.c_str(), &tv.varid) != NC_NOERR) throw tv.fail("no such variable");
    nc_type xtype = 0;
    int ndims = 0;
    if (int s = nc_inq_var(tv.gid, tv.varid, nullptr, &xtype, &ndims, nullptr, nullptr); s != NC_NOERR)
        throw tv.fail(nc_message(s));
    if (ndims < 0 || ndims > NC_MAX_VAR_DIMS) throw tv.fail("bad number of dimensions");
    std::vector<int> dimids(static_cast<size_t>(ndims));
    if (ndims > 0)
        if (int s = nc_inq_vardimid(tv.gid, tv.varid, dimids.data()); s != NC_NOERR) throw tv.fail(nc_message(s));

    TermArray out;
    out.path = full;
    const uint64_t total = read_term_header(tv, dimids, out);
    if (xtype == NC_STRING) read_string_values(tv, total, out);
    else if (xtype == NC_CHAR) read_char_values(tv, total, out);
    else read_numeric_values(tv, xtype, total, out);
    return out;
}

std::vector<uint64_t> TermFile::shape_of(const std::string& full) const {
    auto slash = full.rfind('/');
    std::string group = slash == 0 || slash == std::string::npos ? "/" : full.substr(0, slash);
    std::string var = full.substr(slash == std::string::npos ? 0 : slash + 1);
    std::lock_guard lock(netcdf_library_mutex());
    int gid = ncid_, varid = -1, ndims = 0;
    if ((group != "/" && nc_inq_grp_full_ncid(ncid_, group.c_str(), &gid) != NC_NOERR) ||
        nc_inq_varid(gid, var.c_str(), &varid) != NC_NOERR || nc_inq_varndims(gid, varid, &ndims) != NC_NOERR ||
        ndims < 0 || ndims > NC_MAX_VAR_DIMS)
        throw SourceError(path_, "variable " + full + ": no such variable");
    std::vector<int> ids(static_cast<size_t>(ndims));
    if (ndims > 0) nc_inq_vardimid(gid, varid, ids.data());
    std::vector<uint64_t> shape;
    for (int id : ids) {
        size_t len = 0;
        nc_inq_dimlen(gid, id, &len);
        shape.push_back(len);
    }
    return shape;
}

std::vector<TermFile::VariableDims> TermFile::root_variables() const {
    std::lock_guard lock(netcdf_library_mutex());
    std::vector<VariableDims> out;
    int nvars = 0;
    if (nc_inq_nvars(ncid_, &nvars) != NC_NOERR || nvars <= 0) return out;
    std::vector<int> ids(static_cast<size_t>(nvars));
    if (nc_inq_varids(ncid_, &nvars, ids.data()) != NC_NOERR) return out;
    for (int id : ids) {
        char name[NC_MAX_NAME + 1] = {};
        int ndims = 0;
        if (nc_inq_var(ncid_, id, name, nullptr, &ndims, nullptr, nullptr) != NC_NOERR) continue;
        if (ndims < 0 || ndims > NC_MAX_VAR_DIMS) continue;
        std::vector<int> dimids(static_cast<size_t>(ndims));
        if (ndims > 0 && nc_inq_vardimid(ncid_, id, dimids.data()) != NC_NOERR) continue;
        VariableDims v{name, {}, text_att(ncid_, id, "aggregated_data"), text_att(ncid_, id, "aggregated_dimensions")};
        for (int d : dimids) {
            char dn[NC_MAX_NAME + 1] = {};
            if (nc_inq_dimname(ncid_, d, dn) == NC_NOERR) v.dims.push_back(dn);
        }
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace ncafs::agg
