// HDF5 features that make the library open other files by name, as the
// daemon's user: external storage (a contiguous dataset whose bytes lie in
// named raw files), virtual datasets (mappings onto datasets of named HDF5
// files) and external links (a link to an object of another file). A file in
// SOURCE must not reach beyond SOURCE that way, so ncafs refuses them by name
// (docs/formats/netcdf4.md "Indirections"):
//  - a variable with external storage or a virtual layout stays listed, but
//    every read of it fails before HDF5 touches its data;
//  - an external link is never followed by anyone in the process (netcdf-c
//    included): install_external_link_refusal() replaces HDF5's external
//    link class, and a traversal yields an empty group of an in-memory file.
// Every function here that calls HDF5 requires the library lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::netcdf {

enum class Hdf5IndirectionKind { ExternalStorage, VirtualDataset, ExternalLink };

// "HDF5 external storage", "an HDF5 virtual layout", "an HDF5 external link".
const char* indirection_kind_text(Hdf5IndirectionKind kind);

// False only when the test-only environment variable
// NCAFS_TEST_ALLOW_HDF5_INDIRECTION=1 is set (read once): a test of the
// kernel sandbox switches the check off to show the sandbox alone refuses.
// Never set it in production: HDF5 then opens what a file names.
bool hdf5_indirection_check_enabled();

// Replaces HDF5's external link class once per process (no-op when the check
// is disabled). Called by netcdf_library_mutex()'s first caller.
void install_external_link_refusal() NCAFS_REQUIRES(library_mutex);

// What a walk of one HDF5 file found: every dataset reachable from the root
// group (through hard and soft links), each with its indirection if any, and
// every external or user-defined link.
class Hdf5Indirections {
public:
    // Walks the HDF5 file at `path` (opened read-only by HDF5 itself, e.g. a
    // /proc/self/fd/N name); `shown` names it in messages. The walk is bounded
    // (depth, number of links); a file beyond the bounds, or one HDF5 cannot
    // walk, throws SourceError: it is refused whole.
    static Hdf5Indirections find(const std::string& path, const std::string& shown) NCAFS_REQUIRES(library_mutex);
    // The walk of an HDF5 file already open (`file`: its hid_t); `visit`,
    // when given, is called with every dataset without indirection (its
    // hid_t and that of its creation property list) and its HDF5 path.
    using DatasetVisitor = std::function<void(int64_t dataset, int64_t dcpl, const std::string& path)>;
    static Hdf5Indirections walk(int64_t file, const std::string& shown, const DatasetVisitor& visit = {})
        NCAFS_REQUIRES(library_mutex);

    // nullopt when netCDF variable `name` of group `group` ("" or "/" for the
    // root, "/a/b") may be read; else why not ("variable x uses HDF5 external
    // storage (/root/secret.txt): refused"). A variable the walk did not see
    // is refused too (it could not be checked).
    std::optional<std::string> refusal(const std::string& group, const std::string& name) const;

    struct Finding {
        Hdf5IndirectionKind kind;
        std::string path;    // HDF5 path of the link ("/g/x")
        std::string target;  // the file (and object) it names, shortened for messages
    };
    const std::vector<Finding>& findings() const { return findings_; }
    // "link /g/x is an HDF5 external link (other.h5:/y): refused, left out".
    static std::string describe_link(const Finding& f);

    // The parts, for a survey sent by a helper process (survey_wire.hpp).
    using Datasets = std::map<std::string, std::optional<Finding>>;
    const Datasets& datasets() const { return datasets_; }
    static Hdf5Indirections from_parts(Datasets datasets, std::vector<Finding> findings);

private:
    friend struct Hdf5Walk;
    std::map<std::string, std::optional<Finding>> datasets_;  // HDF5 path -> its indirection
    std::vector<Finding> findings_;
};

}  // namespace ncafs::netcdf
