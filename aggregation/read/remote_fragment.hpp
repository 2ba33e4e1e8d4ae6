// Opening a partition that lies on an HTTP(S) server or in an S3 store
// (remote/remote_store.hpp): classic (CDF), ds and ncstream objects are read
// by byte range; netCDF-4 (HDF5) objects, which netcdf-c reads only by
// name here, from their whole local copy in the RemoteStore's disk cache (a
// trusted place outside the confinement roots). No path confinement and no
// partition watch apply: the object's version is checked on every read.
#pragma once

#include <memory>
#include <string>

#include "io/open_file.hpp"

namespace ncafs::agg {

struct RemoteFragmentFile {
    FileIdentity identity;                    // of the remote object (URL and version)
    std::shared_ptr<const OpenFile> read_from;  // the object itself, or its local copy
};

// Throws SourceError naming the URL (unreachable, refused, remote=no, no
// cache_dir for a netCDF-4 object...).
RemoteFragmentFile open_remote_fragment(const std::string& url);

}  // namespace ncafs::agg
