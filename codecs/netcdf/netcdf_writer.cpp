#include "codecs/netcdf/netcdf_writer.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "codecs/error.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::netcdf {

namespace {

int create_mode(OutputFormat format) {
    switch (format) {
        case OutputFormat::Classic64BitOffset: return NC_CLOBBER | NC_64BIT_OFFSET;
        case OutputFormat::Cdf5: return NC_CLOBBER | NC_64BIT_DATA;
        case OutputFormat::Netcdf4: return NC_CLOBBER | NC_NETCDF4;
    }
    return NC_CLOBBER | NC_NETCDF4;
}

// One output file open in netcdf-c, in define mode until enddef(); each call under the library lock.
class NetcdfWriter {
public:
    NetcdfWriter(const std::string& path, const std::string& shown, OutputFormat format) : shown_(shown) {
        LibraryLock lock;
        check(nc_create(path.c_str(), create_mode(format), &ncid_), "cannot create");
    }
    // Closes the file if close() was not reached (after an error: its bytes are not kept).
    ~NetcdfWriter() {
        if (ncid_ < 0) return;
        LibraryLock lock;
        nc_close(ncid_);
    }
    NetcdfWriter(const NetcdfWriter&) = delete;
    NetcdfWriter& operator=(const NetcdfWriter&) = delete;

    int def_dim(const std::string& name, size_t length, bool unlimited) {
        LibraryLock lock;
        int id = -1;
        check(nc_def_dim(ncid_, name.c_str(), unlimited ? NC_UNLIMITED : length, &id), "dimension " + name);
        return id;
    }
    int def_var(const std::string& name, nc_type type, const std::vector<int>& dimids) {
        LibraryLock lock;
        int id = -1;
        check(nc_def_var(ncid_, name.c_str(), type, static_cast<int>(dimids.size()),
                         dimids.empty() ? nullptr : dimids.data(), &id),
              "variable " + name);
        return id;
    }
    // varid NC_GLOBAL: a global attribute.
    void put_att(int varid, const Attribute& a, const std::string& what) {
        LibraryLock lock;
        if (a.type == NcType::Char) {
            const char* text = a.values.empty() ? "" : reinterpret_cast<const char*>(a.values.data());
            check(nc_put_att_text(ncid_, varid, a.name.c_str(), a.values.size(), text), what);
        } else {
            check(nc_put_att(ncid_, varid, a.name.c_str(), static_cast<nc_type>(a.type), a.length(), a.values.data()), what);
        }
    }
    void enddef() {
        LibraryLock lock;
        check(nc_enddef(ncid_), "end of definitions");
    }
    // Data mode: a whole variable each.
    void put_var(int varid, const void* values, const std::string& what) {
        LibraryLock lock;
        check(nc_put_var(ncid_, varid, values), what);
    }
    void put_var_longlong(int varid, const long long* values, const std::string& what) {
        LibraryLock lock;
        check(nc_put_var_longlong(ncid_, varid, values), what);
    }
    void put_var_string(int varid, const char** values, const std::string& what) {
        LibraryLock lock;
        check(nc_put_var_string(ncid_, varid, values), what);
    }
    void put_var_text(int varid, const char* values, const std::string& what) {
        LibraryLock lock;
        check(nc_put_var_text(ncid_, varid, values), what);
    }
    void close() {
        LibraryLock lock;
        const int id = ncid_;
        ncid_ = -1;
        check(nc_close(id), "close");
    }

private:
    void check(int status, const std::string& what) const {
        if (status != NC_NOERR) throw SourceError(shown_, what + ": " + nc_strerror(status));
    }
    std::string shown_;
    int ncid_ = -1;
};

// What the definitions gave, by name: dimension ids and lengths, variable ids.
struct Defined {
    std::map<std::string, int> dimids;
    std::map<std::string, uint64_t> lengths;
    std::map<std::string, std::pair<int, const OutputVariable*>> variables;
};

// owner empty: global attributes.
void put_attributes(NetcdfWriter& w, int varid, const std::vector<Attribute>& attrs, const std::string& owner) {
    for (const auto& a : attrs) w.put_att(varid, a, "attribute " + (owner.empty() ? a.name : owner + ":" + a.name));
}

void define_variable(NetcdfWriter& w, const OutputVariable& v, Defined& ids) {
    std::vector<int> dimids;
    for (const auto& d : v.dims) dimids.push_back(ids.dimids.at(d));
    const int varid = w.def_var(v.name, v.is_string ? NC_STRING : static_cast<nc_type>(v.type), dimids);
    put_attributes(w, varid, v.attributes, v.name);
    ids.variables[v.name] = {varid, &v};
}

// Dimensions, global attributes, then the variables with theirs.
Defined define(NetcdfWriter& w, const OutputFile& file) {
    Defined ids;
    for (const auto& d : file.dimensions) {
        ids.dimids[d.name] = w.def_dim(d.name, d.length, d.unlimited);
        ids.lengths[d.name] = d.length;
    }
    put_attributes(w, NC_GLOBAL, file.attributes, "");
    for (const auto& v : file.variables) define_variable(w, v, ids);
    return ids;
}

// count strings (element(i) the i-th): C strings into a string variable
// (width 0), else each NUL-padded to width bytes of a char variable.
template <class Element>
void put_strings(NetcdfWriter& w, int varid, size_t width, size_t count, Element element, const std::string& what) {
    if (width == 0) {
        std::vector<const char*> p;
        for (size_t i = 0; i < count; ++i) p.push_back(element(i).c_str());
        w.put_var_string(varid, p.data(), what);
        return;
    }
    std::string buf(count * width, '\0');
    for (size_t i = 0; i < count; ++i) {
        const std::string& s = element(i);
        std::memcpy(buf.data() + i * width, s.data(), std::min(width, s.size()));
    }
    w.put_var_text(varid, buf.data(), what);
}

void write_values(NetcdfWriter& w, const OutputValues& values, const Defined& ids) {
    const auto& [varid, variable] = ids.variables.at(values.variable);
    // Strings into a char variable: its last dimension is the string length.
    const size_t width = variable->is_string ? 0 : variable->dims.empty() ? 1 : ids.lengths.at(variable->dims.back());
    if (const auto* b = std::get_if<ElementBytes>(&values.data)) {
        if (!b->bytes.empty()) w.put_var(varid, b->bytes.data(), values.what);
    } else if (const auto* n = std::get_if<Integers>(&values.data)) {
        w.put_var_longlong(varid, n->values.data(), values.what);
    } else if (const auto* s = std::get_if<Strings>(&values.data)) {
        put_strings(w, varid, width, s->values.size(), [&](size_t i) -> const std::string& { return s->values[i]; },
                    values.what);
    } else if (const auto* p = std::get_if<PickedStrings>(&values.data)) {
        put_strings(w, varid, width, p->picks->size(),
                    [&](size_t i) -> const std::string& { return (*p->values)[(*p->picks)[i]]; }, values.what);
    }
}

}  // namespace

void write_netcdf_file(const std::string& path, const std::string& shown, const OutputFile& file) {
    NetcdfWriter w(path, shown, file.format);  // closed, unkept, on an error
    const Defined ids = define(w, file);
    w.enddef();
    for (const auto& v : file.values) write_values(w, v, ids);
    w.close();
}

}  // namespace ncafs::netcdf
