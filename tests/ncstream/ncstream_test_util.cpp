#include "ncstream_test_util.hpp"

#include <netcdf.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>

#include "codecs/array_source.hpp"
#include "codecs/ncstream/framing.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::ncstream::testing {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v ? v : fallback;
}

void nc_check(int rc, const std::string& what) {
    if (rc != NC_NOERR) throw std::runtime_error(what + ": " + nc_strerror(rc));
}

std::vector<Attribute> nc_attributes(int ncid, int varid) {
    int natts = 0;
    nc_check(nc_inq_varnatts(ncid, varid, &natts), "nc_inq_varnatts");
    std::vector<Attribute> out;
    for (int i = 0; i < natts; ++i) {
        char name[NC_MAX_NAME + 1];
        nc_type t;
        size_t len;
        nc_check(nc_inq_attname(ncid, varid, i, name), "nc_inq_attname");
        nc_check(nc_inq_att(ncid, varid, name, &t, &len), "nc_inq_att");
        Attribute a{name, static_cast<NcType>(t), {}};
        a.values.resize(len * type_size(a.type));
        nc_check(nc_get_att(ncid, varid, name, a.values.data()), "nc_get_att");
        out.push_back(std::move(a));
    }
    return out;
}

void append(std::vector<uint8_t>& out, const Magic& m) { out.insert(out.end(), m.begin(), m.end()); }

}  // namespace

std::string make_temp_dir() {
    std::string tmpl = env_or("NCAFS_BINARY_DIR", "/tmp") + "/ncstream_test_XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    return tmpl;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::string> corpus_names() { return {"classic_types", "cdf5_types", "empty_record"}; }

std::string make_corpus_file(const std::string& dir, const std::string& name) {
    const std::string cdl = env_or("NCAFS_SOURCE_DIR", ".") + "/tests/data/ncstream/" + name + ".cdl";
    const std::string out = dir + "/" + name + ".nc";
    const std::string kind = name.rfind("cdf5", 0) == 0 ? "-k cdf5 " : "";
    const std::string cmd = "ncgen " + kind + "-o '" + out + "' '" + cdl + "'";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
    return out;
}

std::vector<uint8_t> read_all(const ArraySource& src) {
    std::vector<uint8_t> out(src.element_count() * type_size(src.type()));
    std::vector<uint64_t> start(src.shape().size(), 0);
    src.read(start, src.shape(), ByteOrder::Native, out.data());
    return out;
}

NetcdfFileContents read_with_netcdf_c(const std::string& path) {
    std::lock_guard lock(netcdf_library_mutex());
    int ncid;
    nc_check(nc_open(path.c_str(), NC_NOWRITE, &ncid), "nc_open " + path);
    NetcdfFileContents out;
    int ndims, nvars, unlimdim;
    nc_check(nc_inq(ncid, &ndims, &nvars, nullptr, &unlimdim), "nc_inq");
    for (int d = 0; d < ndims; ++d) {
        char name[NC_MAX_NAME + 1];
        size_t len;
        nc_check(nc_inq_dim(ncid, d, name, &len), "nc_inq_dim");
        out.dims.push_back(Dimension{name, len, d == unlimdim});
    }
    out.attributes = nc_attributes(ncid, NC_GLOBAL);
    for (int v = 0; v < nvars; ++v) {
        char name[NC_MAX_NAME + 1];
        nc_type t;
        int nd, dimids[NC_MAX_VAR_DIMS];
        nc_check(nc_inq_var(ncid, v, name, &t, &nd, dimids, nullptr), "nc_inq_var");
        NetcdfVariable var{name, t, {}, {}, {}, nc_attributes(ncid, v)};
        uint64_t n = 1;
        for (int k = 0; k < nd; ++k) {
            var.dims.push_back(out.dims[dimids[k]].name);
            var.shape.push_back(out.dims[dimids[k]].length);
            n *= out.dims[dimids[k]].length;
        }
        var.values.resize(n * type_size(static_cast<NcType>(t)));
        if (n) nc_check(nc_get_var(ncid, v, var.values.data()), "nc_get_var");
        out.variables.push_back(std::move(var));
    }
    nc_close(ncid);
    return out;
}

std::vector<uint8_t> netcdf_c_vara(const std::string& path, const std::string& var, const std::vector<uint64_t>& start,
                                   const std::vector<uint64_t>& count) {
    std::lock_guard lock(netcdf_library_mutex());
    int ncid, varid;
    nc_type t;
    nc_check(nc_open(path.c_str(), NC_NOWRITE, &ncid), "nc_open");
    nc_check(nc_inq_varid(ncid, var.c_str(), &varid), "nc_inq_varid");
    nc_check(nc_inq_vartype(ncid, varid, &t), "nc_inq_vartype");
    std::vector<size_t> s(start.begin(), start.end()), c(count.begin(), count.end());
    uint64_t n = 1;
    for (auto x : count) n *= x;
    std::vector<uint8_t> out(n * type_size(static_cast<NcType>(t)));
    if (n) nc_check(nc_get_vara(ncid, varid, s.data(), c.data(), out.data()), "nc_get_vara");
    nc_close(ncid);
    return out;
}

StreamBuilder& StreamBuilder::start() {
    append(bytes_, kMagicStart);
    return *this;
}

StreamBuilder& StreamBuilder::header(const pb::Header& h) {
    append(bytes_, kMagicHeader);
    std::string s;
    if (!h.SerializeToString(&s)) throw std::runtime_error("header does not serialise");
    varint(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
}

StreamBuilder& StreamBuilder::data(const pb::Data& d, const std::vector<uint8_t>& payload) {
    append(bytes_, kMagicData);
    std::string s;
    if (!d.SerializeToString(&s)) throw std::runtime_error("data does not serialise");
    varint(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    varint(payload.size());
    bytes_.insert(bytes_.end(), payload.begin(), payload.end());
    return *this;
}

StreamBuilder& StreamBuilder::raw(const std::vector<uint8_t>& bytes) {
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return *this;
}

StreamBuilder& StreamBuilder::varint(uint64_t v) {
    uint8_t b[10];
    size_t n = encode_varint(v, b);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
}

StreamBuilder& StreamBuilder::end() {
    append(bytes_, kMagicEnd);
    return *this;
}

}  // namespace ncafs::ncstream::testing
