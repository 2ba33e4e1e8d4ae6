#include "codecs/netcdf/hdf5_indirection.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "codecs/error.hpp"
#include "codecs/netcdf/hdf5_handle.hpp"
#include "codecs/netcdf/library_calls.hpp"

namespace ncafs::netcdf {

namespace {

// Bounds of the walk against hostile files: netcdf-c itself walks every link
// of every group, so a legitimate file stays well inside them.
constexpr size_t kMaxLinks = 100000;
constexpr int kMaxDepth = 32;
constexpr size_t kMaxTargetText = 256;

std::string shortened(std::string text) {
    if (text.size() > kMaxTargetText) text = text.substr(0, kMaxTargetText) + "...";
    return text;
}

std::string child_path(const std::string& parent, const std::string& name) {
    return (parent == "/" ? "/" : parent + "/") + name;
}

// ---- external links: never traversed --------------------------------------

hid_t refused_links_file NCAFS_GUARDED_BY(library_mutex) = -1;  // an empty in-memory HDF5 file

// What a traversal of an external link gives instead of the other file's
// object: the root group of an empty in-memory file. netcdf-c then sees an
// empty group (left out like every group) where the link is.
hid_t traverse_refused(const char*, hid_t, const void*, size_t, hid_t, hid_t) NCAFS_REQUIRES(library_mutex) {
    if (refused_links_file < 0) return -1;
    return H5Gopen2(refused_links_file, "/", H5P_DEFAULT);
}

// H5Lget_val gives the link's stored value (flags, file name, object name),
// as HDF5's own class does, so that the walk can name the target.
ssize_t query_refused(const char*, const void* value, size_t size, void* buf, size_t buf_size) {
    if (buf && buf_size > 0) std::memcpy(buf, value, std::min(size, buf_size));
    return static_cast<ssize_t>(size);
}

}  // namespace

const char* indirection_kind_text(Hdf5IndirectionKind kind) {
    switch (kind) {
        case Hdf5IndirectionKind::ExternalStorage: return "HDF5 external storage";
        case Hdf5IndirectionKind::VirtualDataset: return "an HDF5 virtual layout";
        case Hdf5IndirectionKind::ExternalLink: break;
    }
    return "an HDF5 external link";
}

bool hdf5_indirection_check_enabled() {
    // Test-only switch (tests/README.md): never set outside tests.
    static const bool enabled = [] {
        const char* v = std::getenv("NCAFS_TEST_ALLOW_HDF5_INDIRECTION");
        return !(v && std::strcmp(v, "1") == 0);
    }();
    return enabled;
}

void install_external_link_refusal() {
    static bool installed = false;
    if (installed || !hdf5_indirection_check_enabled()) return;
    installed = true;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 4096, 0);  // memory only, never written anywhere
    // A name no one can create: HDF5 tries to open it before creating in memory.
    refused_links_file = H5Fcreate("/proc/self/ncafs-refused-external-link", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    H5L_class_t refused{H5L_LINK_CLASS_T_VERS,
                        H5L_TYPE_EXTERNAL,
                        "external link refused by ncafs",
                        nullptr,
                        nullptr,
                        nullptr,
                        traverse_refused,
                        nullptr,
                        query_refused};
    // Replaces the built-in class; should it fail, traversals fail (whole
    // file refused by netcdf-c) rather than open the other file.
    if (H5Lregister(&refused) < 0) H5Lunregister(H5L_TYPE_EXTERNAL);
}

// ---- the walk ---------------------------------------------------------------

struct Hdf5Walk {
    Hdf5Indirections& out;
    const std::string& shown;
    const Hdf5Indirections::DatasetVisitor& visit;
    size_t links = 0;
    std::string failure;  // set when the walk stops: the file is refused whole

    void group(hid_t gid, const std::string& path, int depth) NCAFS_REQUIRES(library_mutex);
    void link(hid_t gid, const char* name, const H5L_info_t& info, const std::string& parent, int depth) NCAFS_REQUIRES(library_mutex);
    std::optional<Hdf5Indirections::Finding> dataset(hid_t gid, const char* name, const std::string& path)
        NCAFS_REQUIRES(library_mutex);
    std::string external_link_target(hid_t gid, const char* name, const H5L_info_t& info) NCAFS_REQUIRES(library_mutex);
};

namespace {

struct GroupVisit {
    Hdf5Walk* walk;
    const std::string* path;
    int depth;
};

herr_t visit_link(hid_t gid, const char* name, const H5L_info_t* info, void* data) NCAFS_REQUIRES(library_mutex) {
    auto* v = static_cast<GroupVisit*>(data);
    v->walk->link(gid, name, *info, *v->path, v->depth);
    return v->walk->failure.empty() ? 0 : -1;
}

std::string virtual_sources(hid_t dcpl) NCAFS_REQUIRES(library_mutex) {
    size_t n = 0;
    if (H5Pget_virtual_count(dcpl, &n) < 0 || n == 0) return "no source";
    char name[1024] = {};
    if (H5Pget_virtual_filename(dcpl, 0, name, sizeof name) < 0) name[0] = 0;
    std::string text = shortened(name);
    if (n > 1) text += " and " + std::to_string(n - 1) + " more mapping(s)";
    return text;
}

std::string external_files(hid_t dcpl, int count) NCAFS_REQUIRES(library_mutex) {
    char name[1024] = {};
    off_t offset = 0;
    hsize_t size = 0;
    if (H5Pget_external(dcpl, 0, sizeof name, name, &offset, &size) < 0) name[0] = 0;
    std::string text = shortened(name);
    if (count > 1) text += " and " + std::to_string(count - 1) + " more file(s)";
    return text;
}

}  // namespace

void Hdf5Walk::group(hid_t gid, const std::string& path, int depth) {
    GroupVisit at{this, &path, depth};
    hsize_t index = 0;
    if (H5Literate(gid, H5_INDEX_NAME, H5_ITER_NATIVE, &index, visit_link, &at) < 0 && failure.empty())
        failure = "HDF5 cannot list group " + shortened(path);
}

std::string Hdf5Walk::external_link_target(hid_t gid, const char* name, const H5L_info_t& info) {
    if (info.type != H5L_TYPE_EXTERNAL) return "user-defined link class " + std::to_string(info.type);
    std::vector<char> value(std::min<size_t>(info.u.val_size, 1 << 16) + 1, 0);
    const char* file = nullptr;
    const char* object = nullptr;
    unsigned flags = 0;
    if (H5Lget_val(gid, name, value.data(), value.size() - 1, H5P_DEFAULT) < 0 ||
        H5Lunpack_elink_val(value.data(), value.size() - 1, &flags, &file, &object) < 0 || !file)
        return "unreadable target";
    return shortened(std::string(file) + ":" + (object ? object : ""));
}

std::optional<Hdf5Indirections::Finding> Hdf5Walk::dataset(hid_t gid, const char* name, const std::string& path) {
    // H5Dopen reads the dataset's header only: no external file, no virtual source.
    Hid d(H5Dopen2(gid, name, H5P_DEFAULT), H5Dclose);
    if (!d.ok()) throw SourceError(shown, "HDF5 cannot open dataset " + shortened(path) + " to check its storage");
    Hid dcpl(H5Dget_create_plist(d), H5Pclose);
    if (!dcpl.ok()) throw SourceError(shown, "HDF5 cannot read the storage of dataset " + shortened(path));
    if (H5Pget_layout(dcpl) == H5D_VIRTUAL)
        return Hdf5Indirections::Finding{Hdf5IndirectionKind::VirtualDataset, path, virtual_sources(dcpl)};
    if (int n = H5Pget_external_count(dcpl); n != 0)  // n < 0: cannot tell, refuse as well
        return Hdf5Indirections::Finding{Hdf5IndirectionKind::ExternalStorage, path, external_files(dcpl, n)};
    if (visit) visit(d, dcpl, path);
    return std::nullopt;
}

void Hdf5Walk::link(hid_t gid, const char* name, const H5L_info_t& info, const std::string& parent, int depth) {
    if (++links > kMaxLinks) {
        failure = "more than " + std::to_string(kMaxLinks) + " HDF5 links to check";
        return;
    }
    const std::string path = child_path(parent, name);
    if (info.type != H5L_TYPE_HARD && info.type != H5L_TYPE_SOFT) {  // external or user-defined: never followed
        Hdf5Indirections::Finding f{Hdf5IndirectionKind::ExternalLink, path, external_link_target(gid, name, info)};
        out.datasets_[path] = f;
        out.findings_.push_back(std::move(f));
        return;
    }
    // A soft link resolves inside this file (an external link on its way
    // yields the empty in-memory group); a dangling one is not an object.
    H5O_info_t object{};
    if (H5Oget_info_by_name2(gid, name, &object, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return;
    if (object.type == H5O_TYPE_DATASET) {
        auto found = dataset(gid, name, path);
        if (found) out.findings_.push_back(*found);
        out.datasets_[path] = std::move(found);
    } else if (object.type == H5O_TYPE_GROUP) {
        if (depth + 1 > kMaxDepth) {
            failure = "HDF5 groups nested deeper than " + std::to_string(kMaxDepth);
            return;
        }
        Hid child(H5Gopen2(gid, name, H5P_DEFAULT), H5Gclose);
        if (!child.ok()) {
            failure = "HDF5 cannot open group " + shortened(path);
            return;
        }
        group(child, path, depth + 1);
    }
}

Hdf5Indirections Hdf5Indirections::find(const std::string& path, const std::string& shown) {
    Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) throw SourceError(shown, "HDF5 cannot open it to check for external storage");
    return walk(file, shown);
}

Hdf5Indirections Hdf5Indirections::walk(int64_t file, const std::string& shown, const DatasetVisitor& visit) {
    Hdf5Indirections out;
    Hid root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
    if (!root.ok()) throw SourceError(shown, "HDF5 cannot open its root group");
    Hdf5Walk walk{out, shown, visit};
    walk.group(root, "/", 0);
    if (!walk.failure.empty()) throw SourceError(shown, walk.failure + ": refused");
    return out;
}

Hdf5Indirections Hdf5Indirections::from_parts(Datasets datasets, std::vector<Finding> findings) {
    Hdf5Indirections out;
    out.datasets_ = std::move(datasets);
    out.findings_ = std::move(findings);
    return out;
}

std::optional<std::string> Hdf5Indirections::refusal(const std::string& group, const std::string& name) const {
    const std::string g = group.empty() ? "/" : group;
    // netcdf-c stores a variable named like a dimension but not its
    // coordinate variable as "_nc4_non_coord_NAME".
    auto it = datasets_.find(child_path(g, name));
    if (it == datasets_.end()) it = datasets_.find(child_path(g, "_nc4_non_coord_" + name));
    if (it == datasets_.end())
        return "variable " + name + " could not be checked for HDF5 external storage: refused";
    if (!it->second) return std::nullopt;
    const Finding& f = *it->second;
    return "variable " + name + " uses " + indirection_kind_text(f.kind) + " (" + f.target + "): refused";
}

std::string Hdf5Indirections::describe_link(const Finding& f) {
    return "link " + f.path + " is " + indirection_kind_text(f.kind) + " (" + f.target + "): refused, left out";
}

}  // namespace ncafs::netcdf
