// What netcdf-c says of one group of a netCDF-4 file, as values only (no
// netcdf-c id): read in a helper process (netcdf_helpers.hpp) and sent to the daemon
// (survey_wire.hpp), which builds its Dataset from it (netcdf_dataset.hpp)
// without opening the file with netcdf-c. The same description is read
// in-process where no helpers run (unit tests) and in the helper itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::netcdf {

struct Hdf5Survey;

struct VariableDescription {
    std::string name;
    NcType type = NcType::Byte;
    int varid = 0;                      // netcdf-c's id within its group (asked of a helper)
    std::vector<size_t> dimids;         // indices into NetcdfDescription::dimensions
    std::vector<Attribute> attributes;
    std::optional<std::string> refusal;   // HDF5 external storage or virtual layout: every read fails
    std::vector<uint64_t> chunk_lengths;  // chunked: the chunk shape clipped to the shape; else empty
    bool filtered = false;                // chunked with some filter
    std::vector<uint8_t> fill;            // one element of its fill value (native order); empty: none known
};

struct NetcdfDescription {
    std::string group;       // as asked: "" for the root group, else "/a/b"
    std::string group_path;  // netcdf-c's full name: "/" or "/a/b"
    int group_id = 0;        // netcdf-c's group number within the file (ncid & 0xffff)
    std::vector<Dimension> dimensions;  // the group's and (for a subgroup) its ancestors'
    std::vector<Attribute> attributes;  // the group's
    std::vector<VariableDescription> variables;
    std::vector<DatasetNote> notes;     // what Dataset::notes will say
    std::vector<std::string> skipped;   // one line per item left out, without the file's name
};

// Reads the description of `group` ("" for the root) of the file netcdf-c
// holds open as `ncid`, with the indirections the survey found (nullptr:
// none known). `shown` names the file in errors. Throws SourceError.
NetcdfDescription describe_group(int ncid, const Hdf5Survey* survey, const std::string& group,
                                 const std::string& shown) NCAFS_REQUIRES(library_mutex);

}  // namespace ncafs::netcdf
