#include <algorithm>
#include <cstring>
#include <map>

#include "codecs/error.hpp"
#include "codecs/netcdf/chunked_read.hpp"
#include "codecs/netcdf/hdf5_survey.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_description.hpp"

namespace ncafs::netcdf {

namespace {

// netcdf-c's NC_BYTE..NC_UINT64 equal our type tags 1..11.
bool is_classic_tag(nc_type t) { return t >= NC_BYTE && t <= NC_UINT64; }

// What the steps of describe_group share (the library lock held).
struct Describing {
    const Hdf5Survey* survey;
    std::string shown;
    int ncid = -1;  // the group described
    NetcdfDescription out;
    std::map<int, size_t> dim_index;  // netCDF dimension id -> index in out.dimensions

    [[noreturn]] void fail(const std::string& what, int status) const {
        throw SourceError(shown, what + ": " + nc_message(status));
    }
    // A variable or group left out: a note of the dataset (logged and listed by inspect).
    void skip(const std::string& name, const std::string& why) {
        out.notes.push_back({false, false, name, why});
        out.skipped.push_back(why);
    }
};

void read_attribute(Describing& dc, int varid, const char* name, const std::string& owner,
                    std::vector<Attribute>& out) NCAFS_REQUIRES(library_mutex) {
    nc_type xtype = 0;
    size_t len = 0;
    const std::string what = "cannot read attribute " + owner + ":" + name;
    if (int s = nc_inq_att(dc.ncid, varid, name, &xtype, &len); s != NC_NOERR) dc.fail(what, s);
    if (is_classic_tag(xtype)) {
        Attribute a{name, static_cast<NcType>(xtype), {}};
        a.values.resize(len * type_size(a.type));
        if (len > 0)
            if (int s = nc_get_att(dc.ncid, varid, name, a.values.data()); s != NC_NOERR) dc.fail(what, s);
        out.push_back(std::move(a));
    } else if (xtype == NC_STRING && len == 1) {
        char* text = nullptr;
        if (int s = nc_get_att_string(dc.ncid, varid, name, &text); s != NC_NOERR) dc.fail(what, s);
        out.push_back(Attribute::text(name, text ? text : ""));
        nc_free_string(1, &text);
    } else {
        dc.out.skipped.push_back("attribute " + owner + ":" + name + " skipped: type " + std::to_string(xtype) +
                                 " has no classic netCDF equivalent");
    }
}

// Every attribute of varid (NC_GLOBAL for the group's).
std::vector<Attribute> read_attributes(Describing& dc, int varid, const std::string& owner)
    NCAFS_REQUIRES(library_mutex) {
    int natts = 0;
    if (int s = nc_inq_varnatts(dc.ncid, varid, &natts); s != NC_NOERR)
        dc.fail("cannot count attributes of " + owner, s);
    std::vector<Attribute> out;
    for (int i = 0; i < natts; ++i) {
        char name[NC_MAX_NAME + 1] = {};
        if (int s = nc_inq_attname(dc.ncid, varid, i, name); s != NC_NOERR)
            dc.fail("cannot read attribute name of " + owner, s);
        read_attribute(dc, varid, name, owner, out);
    }
    return out;
}

// Dimensions of the group (and, for a subgroup, of its ancestors); netCDF-4
// dimension ids need not be 0..n-1. Returns the unlimited dimensions' ids.
std::vector<int> describe_dimensions(Describing& dc, int include_parents) NCAFS_REQUIRES(library_mutex) {
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
        dc.dim_index[id] = dc.out.dimensions.size();
        dc.out.dimensions.push_back(Dimension{name, len, false});
    }
    return unlimited;
}

// One element of the variable's fill value, when netcdf-c uses one for
// what was never written (empty for a variable without fill).
std::vector<uint8_t> fill_value_of(int ncid, int varid, NcType type) NCAFS_REQUIRES(library_mutex) {
    std::vector<uint8_t> fill(type_size(type));
    int no_fill = 0;
    if (nc_inq_var_fill(ncid, varid, &no_fill, fill.data()) != NC_NOERR || no_fill) return {};
    return fill;
}

// One variable, unless it has no classic equivalent or uses another group's dimension (then skipped).
void describe_variable(Describing& dc, int varid) NCAFS_REQUIRES(library_mutex) {
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
    VariableDescription v;
    v.name = name;
    v.type = static_cast<NcType>(xtype);
    v.varid = varid;
    for (int id : vdims) {
        auto it = dc.dim_index.find(id);
        if (it == dc.dim_index.end()) {  // a dimension of another group: not representable in one root group
            dc.skip(name, "variable " + std::string(name) + " skipped: uses a dimension outside the root group");
            return;
        }
        v.dimids.push_back(it->second);
    }
    v.attributes = read_attributes(dc, varid, name);
    std::vector<uint64_t> shape;
    for (size_t id : v.dimids) shape.push_back(dc.out.dimensions[id].length);
    if (dc.survey && dc.survey->indirections) v.refusal = dc.survey->indirections->refusal(dc.out.group, v.name);
    if (v.refusal) dc.out.notes.push_back({true, true, v.name, *v.refusal});
    if (!v.refusal) v.chunk_lengths = describe_chunking(ncid, varid, shape, v.filtered);
    v.fill = fill_value_of(ncid, varid, v.type);
    dc.out.variables.push_back(std::move(v));
}

// The first unlimited dimension stays unlimited if every variable using it
// has it outermost (what a classic file can express); others become fixed.
void mark_unlimited(Describing& dc, const std::vector<int>& unlimited) {
    for (int id : unlimited) {
        auto it = dc.dim_index.find(id);
        if (it == dc.dim_index.end()) continue;
        bool outermost = true;
        for (const auto& v : dc.out.variables)
            for (size_t k = 1; k < v.dimids.size(); ++k)
                if (v.dimids[k] == it->second) outermost = false;
        if (outermost) {
            dc.out.dimensions[it->second].unlimited = true;
            break;
        }
    }
}

// The subgroups of the root group, named in one note (groups are not
// presented); an external link's stand-in group has its own note already.
void note_groups(Describing& dc) NCAFS_REQUIRES(library_mutex) {
    constexpr int kNamed = 10;
    int n = 0;
    if (nc_inq_grps(dc.ncid, &n, nullptr) != NC_NOERR || n <= 0) return;
    std::vector<int> ids(static_cast<size_t>(n));
    if (nc_inq_grps(dc.ncid, &n, ids.data()) != NC_NOERR) return;
    std::vector<std::string> names;
    for (int id : ids) {
        char name[NC_MAX_NAME + 1] = {};
        if (nc_inq_grpname(id, name) != NC_NOERR) continue;
        const bool link = std::any_of(dc.out.notes.begin(), dc.out.notes.end(),
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

std::string full_group_name(const Describing& dc) NCAFS_REQUIRES(library_mutex) {
    size_t len = 0;
    if (int s = nc_inq_grpname_full(dc.ncid, &len, nullptr); s != NC_NOERR) dc.fail("cannot name the group", s);
    std::string group(len + 1, '\0');
    if (int s = nc_inq_grpname_full(dc.ncid, &len, group.data()); s != NC_NOERR) dc.fail("cannot name the group", s);
    group.resize(std::strlen(group.c_str()));
    return group;
}

}  // namespace

NetcdfDescription describe_group(int ncid, const Hdf5Survey* survey, const std::string& group,
                                 const std::string& shown) {
    Describing dc{survey, group.empty() ? shown : shown + ":" + group};
    dc.out.group = group;
    dc.ncid = ncid;
    if (!group.empty())
        if (int s = nc_inq_grp_full_ncid(ncid, group.c_str(), &dc.ncid); s != NC_NOERR) dc.fail("no group " + group, s);
    dc.out.group_path = full_group_name(dc);
    dc.out.group_id = dc.ncid & 0xffff;  // netcdf-c: the file's id above, the group's below
    const std::vector<int> unlimited = describe_dimensions(dc, group.empty() ? 0 : 1);
    dc.out.attributes = read_attributes(dc, NC_GLOBAL, "global");
    int nvars = 0;
    if (int s = nc_inq_nvars(dc.ncid, &nvars); s != NC_NOERR) dc.fail("cannot count variables", s);
    std::vector<int> varids(static_cast<size_t>(std::max(nvars, 0)));
    if (nvars > 0)
        if (int s = nc_inq_varids(dc.ncid, &nvars, varids.data()); s != NC_NOERR) dc.fail("cannot list variables", s);
    for (int varid : varids) describe_variable(dc, varid);
    mark_unlimited(dc, unlimited);
    if (survey && survey->indirections)
        for (const auto& f : survey->indirections->findings())
            if (f.kind == Hdf5IndirectionKind::ExternalLink)
                dc.out.notes.push_back({true, false, name_in_group(f.path, group), Hdf5Indirections::describe_link(f)});
    if (group.empty()) note_groups(dc);
    return std::move(dc.out);
}

}  // namespace ncafs::netcdf
