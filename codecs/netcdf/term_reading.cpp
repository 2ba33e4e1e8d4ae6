#include "codecs/netcdf/term_reading.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "codecs/error.hpp"
#include "codecs/type_dispatch.hpp"
#include "codecs/netcdf/library_calls.hpp"

namespace ncafs::netcdf {

namespace {

constexpr uint64_t kMaxTextAttribute = uint64_t{1} << 16;
constexpr int kMaxGroupDepth = 64;
constexpr uint64_t kSlabElements = uint64_t{1} << 16;  // elements netcdf-c reads at once

bool is_classic_numeric(nc_type t) { return t >= NC_BYTE && t <= NC_UINT64 && t != NC_CHAR; }

// Text of a char or single-string attribute; nullopt otherwise (or too long).
std::optional<std::string> text_att(int gid, int varid, const char* name) NCAFS_REQUIRES(library_mutex) {
    nc_type t = 0;
    size_t len = 0;
    if (nc_inq_att(gid, varid, name, &t, &len) != NC_NOERR) return std::nullopt;
    if (t == NC_CHAR) {
        if (len > kMaxTextAttribute) return std::nullopt;
        std::string s(len, '\0');
        if (len > 0 && nc_get_att(gid, varid, name, s.data()) != NC_NOERR) return std::nullopt;
        return s;
    }
    if (t == NC_STRING && len >= 1) {
        std::vector<char*> v(len, nullptr);
        if (nc_get_att_string(gid, varid, name, v.data()) != NC_NOERR) return std::nullopt;
        std::string s = v[0] ? v[0] : "";
        nc_free_string(len, v.data());
        if (s.size() > kMaxTextAttribute) return std::nullopt;
        return s;
    }
    return std::nullopt;
}

// Numeric attribute values as doubles (empty when absent or text).
std::vector<double> numeric_att(int gid, int varid, const char* name) NCAFS_REQUIRES(library_mutex) {
    nc_type t = 0;
    size_t len = 0;
    if (nc_inq_att(gid, varid, name, &t, &len) != NC_NOERR || !is_classic_numeric(t) || len == 0 || len > 1024)
        return {};
    const NcType type = static_cast<NcType>(t);
    std::vector<uint8_t> raw(len * type_size(type));
    if (nc_get_att(gid, varid, name, raw.data()) != NC_NOERR) return {};
    std::vector<double> v(len);
    for (size_t i = 0; i < len; ++i) v[i] = element_as_double(type, raw.data(), i);
    return v;
}

// Every char and string attribute of a variable.
TextAttributes text_attributes(int gid, int varid) NCAFS_REQUIRES(library_mutex) {
    TextAttributes out;
    int natts = 0;
    if (nc_inq_varnatts(gid, varid, &natts) != NC_NOERR) return out;
    for (int i = 0; i < natts; ++i) {
        char name[NC_MAX_NAME + 1] = {};
        if (nc_inq_attname(gid, varid, i, name) != NC_NOERR) continue;
        if (auto t = text_att(gid, varid, name)) out.emplace_back(name, std::move(*t));
    }
    return out;
}

// Strips what pads a fixed-width char string: NULs, the variable's fill char, blanks.
std::string_view unpad(std::string_view s, std::optional<char> fill) {
    auto pad = [&](char c) { return c == '\0' || c == ' ' || (fill && c == *fill); };
    if (size_t end = s.find('\0'); end != std::string_view::npos) s = s.substr(0, end);
    while (!s.empty() && pad(s.back())) s.remove_suffix(1);
    return s;
}

// Element i of native-order integers of type t, as int64 (uint64 beyond int64 wraps).
int64_t integer_of(NcType t, const uint8_t* data, uint64_t i) {
    return visit_type(t, [&](auto v) {
        std::memcpy(&v, data + i * sizeof v, sizeof v);
        return static_cast<int64_t>(v);  // called for integer types only
    });
}

// The variables of group gid ("/" + path) and of its subgroups.
void inventory_of_group(int gid, const std::string& prefix, int depth, const std::string& shown,
                        TermInventory& out) NCAFS_REQUIRES(library_mutex) {
    if (depth > kMaxGroupDepth) throw SourceError(shown, "groups nested deeper than " + std::to_string(kMaxGroupDepth));
    int nvars = 0;
    if (int s = nc_inq_varids(gid, &nvars, nullptr); s != NC_NOERR) throw SourceError(shown, nc_message(s));
    std::vector<int> ids(static_cast<size_t>(std::max(nvars, 0)));
    if (nvars > 0 && nc_inq_varids(gid, &nvars, ids.data()) != NC_NOERR) ids.clear();
    for (int id : ids) {
        char name[NC_MAX_NAME + 1] = {};
        int ndims = 0;
        if (nc_inq_var(gid, id, name, nullptr, &ndims, nullptr, nullptr) != NC_NOERR) continue;
        if (ndims < 0 || ndims > NC_MAX_VAR_DIMS) continue;
        std::vector<int> dimids(static_cast<size_t>(ndims));
        if (ndims > 0 && nc_inq_vardimid(gid, id, dimids.data()) != NC_NOERR) continue;
        if (out.variables.size() >= kMaxTermInventory)
            throw SourceError(shown, "more than " + std::to_string(kMaxTermInventory) + " variables");
        TermVariable v{prefix + name, {}, text_attributes(gid, id)};
        for (int d : dimids) {
            char dn[NC_MAX_NAME + 1] = {};
            size_t len = 0;
            if (nc_inq_dim(gid, d, dn, &len) == NC_NOERR) v.dims.push_back(dn);
        }
        out.variables.push_back(std::move(v));
    }
    int ngroups = 0;
    if (nc_inq_grps(gid, &ngroups, nullptr) != NC_NOERR || ngroups <= 0) return;
    std::vector<int> groups(static_cast<size_t>(ngroups));
    if (nc_inq_grps(gid, &ngroups, groups.data()) != NC_NOERR) return;
    for (int g : groups) {
        char name[NC_MAX_NAME + 1] = {};
        if (nc_inq_grpname(g, name) == NC_NOERR) inventory_of_group(g, prefix + name + "/", depth + 1, shown, out);
    }
}

// One term variable being read: where it is, its storage, how to fail.
struct TermVar {
    const std::string& shown;  // the aggregation file
    const std::string& full;   // "/group/name"
    int gid = -1, varid = -1;
    nc_type xtype = 0;
    std::vector<uint64_t> storage;  // the stored shape (a char variable's string length last)
    SourceError fail(const std::string& reason) const { return SourceError(shown, "variable " + full + ": " + reason); }
    bool rows_along_first() const { return storage.size() >= (xtype == NC_CHAR ? 2u : 1u); }
    uint64_t rows() const { return rows_along_first() ? storage[0] : 1; }
};

// Opens the variable: its ids, type and stored shape.
TermVar locate(int ncid, const std::string& shown, const std::string& full) NCAFS_REQUIRES(library_mutex) {
    TermVar tv{shown, full};
    const auto slash = full.rfind('/');
    if (full.empty() || full[0] != '/' || slash == std::string::npos) throw tv.fail("not a variable's full name");
    const std::string group = slash == 0 ? "/" : full.substr(0, slash), var = full.substr(slash + 1);
    tv.gid = ncid;
    if (group != "/" && nc_inq_grp_full_ncid(ncid, group.c_str(), &tv.gid) != NC_NOERR) throw tv.fail("no such group");
    if (nc_inq_varid(tv.gid, var.c_str(), &tv.varid) != NC_NOERR) throw tv.fail("no such variable");
    int ndims = 0;
    if (int s = nc_inq_var(tv.gid, tv.varid, nullptr, &tv.xtype, &ndims, nullptr, nullptr); s != NC_NOERR)
        throw tv.fail(nc_message(s));
    if (ndims < 0 || ndims > NC_MAX_VAR_DIMS) throw tv.fail("bad number of dimensions");
    std::vector<int> dimids(static_cast<size_t>(ndims));
    if (ndims > 0)
        if (int s = nc_inq_vardimid(tv.gid, tv.varid, dimids.data()); s != NC_NOERR) throw tv.fail(nc_message(s));
    for (int id : dimids) {
        size_t len = 0;
        if (int s = nc_inq_dim(tv.gid, id, nullptr, &len); s != NC_NOERR) throw tv.fail(nc_message(s));
        tv.storage.push_back(len);
    }
    return tv;
}

// Dimensions, text attributes and type of the array; its element count, bounded.
uint64_t read_header(const TermVar& tv, TermArray& out) NCAFS_REQUIRES(library_mutex) {
    out.path = tv.full;
    std::vector<int> dimids(tv.storage.size());
    if (!dimids.empty()) nc_inq_vardimid(tv.gid, tv.varid, dimids.data());
    for (size_t k = 0; k < dimids.size(); ++k) {
        char name[NC_MAX_NAME + 1] = {};
        if (int s = nc_inq_dim(tv.gid, dimids[k], name, nullptr); s != NC_NOERR) throw tv.fail(nc_message(s));
        out.dims.push_back(name);
        out.shape.push_back(tv.storage[k]);
    }
    out.text_attributes = text_attributes(tv.gid, tv.varid);
    out.is_text = tv.xtype == NC_STRING || tv.xtype == NC_CHAR;
    if (!out.is_text && !is_classic_numeric(tv.xtype))
        throw tv.fail("has a type (" + std::to_string(tv.xtype) + ") a term variable cannot have");
    if (!out.is_text) out.numeric_type = static_cast<NcType>(tv.xtype);
    if (tv.xtype == NC_CHAR && !out.shape.empty()) out.shape.pop_back(), out.dims.pop_back();
    uint64_t total = 1;
    for (uint64_t s : tv.storage) {
        if (s != 0 && total > kMaxTermElements / s) throw tv.fail("too many elements for a term variable");
        total *= s;
    }
    return out.size();
}

// Appends one text element (masked: missing).
void push_text(TermArray& out, std::string_view v, bool masked) {
    if (!masked) out.text_bytes.append(v);
    out.text_end.push_back(out.text_bytes.size());
    out.masked.push_back(masked);
}

// The box of rows [row, row + n) in the stored shape.
struct Box {
    std::vector<size_t> start, count;
    Box(const TermVar& tv, uint64_t row, uint64_t n) : start(tv.storage.size(), 0), count(tv.storage.begin(), tv.storage.end()) {
        if (tv.rows_along_first()) start[0] = row, count[0] = n;
    }
};

// NC_STRING values; empty, _FillValue and missing_value strings are missing.
void read_strings(const TermVar& tv, const Box& box, uint64_t n, TermArray& out) NCAFS_REQUIRES(library_mutex) {
    const auto fill = text_att(tv.gid, tv.varid, "_FillValue");
    const auto missing = text_att(tv.gid, tv.varid, "missing_value");
    std::vector<char*> values(n, nullptr);
    if (int s = nc_get_vara_string(tv.gid, tv.varid, box.start.data(), box.count.data(), values.data()); s != NC_NOERR)
        throw tv.fail(nc_message(s));
    for (char* p : values) {
        const std::string_view v = p ? std::string_view(p) : std::string_view();
        push_text(out, v, !p || v.empty() || (fill && v == *fill) || (missing && v == *missing));
    }
    nc_free_string(values.size(), values.data());
}

// NC_CHAR values, netCDF-3 storage: the last dimension is the string length.
void read_chars(const TermVar& tv, const Box& box, uint64_t n, TermArray& out) NCAFS_REQUIRES(library_mutex) {
    const uint64_t width = tv.storage.empty() ? 1 : tv.storage.back();
    std::optional<char> fill_char;
    if (auto f = text_att(tv.gid, tv.varid, "_FillValue"); f && !f->empty()) fill_char = (*f)[0];
    const auto missing = text_att(tv.gid, tv.varid, "missing_value");
    const std::string missing_text = missing ? std::string(unpad(*missing, fill_char)) : std::string();
    if (width == 0) {  // zero-width strings: every element missing
        for (uint64_t i = 0; i < n; ++i) push_text(out, {}, true);
        return;
    }
    std::string bytes(n * width, '\0');
    if (!bytes.empty())
        if (int s = nc_get_vara(tv.gid, tv.varid, box.start.data(), box.count.data(), bytes.data()); s != NC_NOERR)
            throw tv.fail(nc_message(s));
    for (uint64_t i = 0; i < n; ++i) {
        const std::string_view v = unpad(std::string_view(bytes).substr(i * width, width), fill_char);
        push_text(out, v, v.empty() || (missing && v == missing_text));
    }
}

// Numeric values: raw bytes and, for integer types, exact integers; masked as netCDF4-python does.
void read_numbers(const TermVar& tv, const Box& box, uint64_t n, TermArray& out) NCAFS_REQUIRES(library_mutex) {
    const NcType type = *out.numeric_type;
    const size_t esize = type_size(type);
    const size_t at = out.bytes.size();
    out.bytes.resize(at + n * esize);
    if (n > 0)
        if (int s = nc_get_vara(tv.gid, tv.varid, box.start.data(), box.count.data(), out.bytes.data() + at); s != NC_NOERR)
            throw tv.fail(nc_message(s));
    std::vector<double> masks = numeric_att(tv.gid, tv.varid, "_FillValue");
    if (masks.empty()) masks.push_back(default_fill_as_double(type));
    for (double m : numeric_att(tv.gid, tv.varid, "missing_value")) masks.push_back(m);
    const uint8_t* values = out.bytes.data() + at;
    for (uint64_t i = 0; i < n; ++i) {
        if (is_integer_type(type)) out.ints.push_back(integer_of(type, values, i));
        const double v = element_as_double(type, values, i);
        out.masked.push_back(std::any_of(masks.begin(), masks.end(), [&](double m) { return v == m || (v != v && m != m); }));
    }
}

}  // namespace

TermInventory read_term_inventory(int ncid, const std::string& shown) {
    TermInventory out;
    inventory_of_group(ncid, "/", 0, shown, out);
    return out;
}

uint64_t term_rows_bytes() {
    static const uint64_t bytes = [] {
        const char* v = std::getenv("NCAFS_TEST_TERM_ROWS_BYTES");
        const long long n = v ? std::atoll(v) : 0;
        return n > 0 ? static_cast<uint64_t>(n) : kTermRowsBytes;
    }();
    return bytes;
}

TermArray read_term_rows(int ncid, const std::string& shown, const std::string& full, uint64_t first_row) {
    return read_term_rows(ncid, shown, full, first_row, term_rows_bytes());
}

TermArray read_term_rows(int ncid, const std::string& shown, const std::string& full, uint64_t first_row,
                         uint64_t most_bytes) {
    const TermVar tv = locate(ncid, shown, full);
    TermArray out;
    const uint64_t total = read_header(tv, out);
    const uint64_t rows = tv.rows();
    if (total == 0 || rows == 0) return out;
    if (first_row >= rows) throw tv.fail("no row " + std::to_string(first_row));
    const uint64_t per_row = total / rows;
    const uint64_t cap = std::max<uint64_t>(most_bytes, 1);
    const uint64_t slab = std::clamp<uint64_t>(term_rows_bytes() / 64, 1, kSlabElements);
    const uint64_t rows_per_slab = std::max<uint64_t>(1, slab / std::max<uint64_t>(per_row, 1));
    // Slabs along the first dimension: netcdf-c allocates one string per
    // element, so a million of them at once would double the peak.
    for (uint64_t r = first_row; r < rows && (r == first_row || term_bytes(out) < cap);) {
        const uint64_t n = std::min(rows_per_slab, rows - r);
        const Box box(tv, r, n);
        if (tv.xtype == NC_STRING) read_strings(tv, box, n * per_row, out);
        else if (tv.xtype == NC_CHAR) read_chars(tv, box, n * per_row, out);
        else read_numbers(tv, box, n * per_row, out);
        r += n;
    }
    return out;
}

}  // namespace ncafs::netcdf
