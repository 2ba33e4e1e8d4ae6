// A Dataset shown as a ds-1.0 file (VirtualFile).
//
// Values::Raw (default): values exactly as stored, no mask (.missing false),
//   numbers big-endian (.endian "b") so that classic-file bytes pass through
//   unchanged (pieces() gives the sources' big_endian_extents); char arrays
//   become "str" of 1-byte strings (ds-format's NC_CHAR mapping). Size from
//   metadata alone; reads lazy and random-access.
// Values::Cf: values as netCDF4-python's default view (ds_cf_rules.hpp),
//   little-endian for multi-byte numbers and string lengths, a mask where
//   elements are masked, so that for a netCDF file the bytes equal what
//   `ds select in.nc out.ds` (ds-format 5.0.2 on x86) writes. The size
//   depends on the data: the first size()/read()/pieces() runs one counting
//   pass (bounded memory: one chunk plus 8 bytes per 65536 elements);
//   later reads are random-access.
// Both: variables sorted by name (byte order), each variable's keys as
// ds-format's netCDF driver orders them (attributes, .dims, .size, .type,
// .offset, .len, .missing, .endian), "." with the global attributes last.
#pragma once

#include <memory>

#include "codecs/dataset.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs {

struct DsViewOptions {
    enum class Values { Raw, Cf } values = Values::Raw;
};

std::shared_ptr<const VirtualFile> make_ds_view(std::shared_ptr<const Dataset> dataset, const DsViewOptions& options);

}  // namespace ncafs
