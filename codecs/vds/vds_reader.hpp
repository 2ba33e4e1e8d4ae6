// Reading an OpenVDS volume as a Dataset: a single-file container (.vds) or
// an object-store directory (VolumeDataLayout, LayerStatus, <layer>/<chunk>).
//
// Mapping to the netCDF model (docs/views.md "VDS sources"):
//  - dimensions: the VDS axes reversed (VDS dim 0 varies fastest, so it is
//    the last netCDF dimension), named after the axes; each stored LOD n >= 1
//    adds dimensions AXIS_lodN (the forced full-resolution axis, never
//    decimated, keeps its LOD0 dimension; axes outside the dimension group
//    are decimated too, as OpenVDS reads them);
//  - coordinate variables (double) from coordinateMin/Max, decimated at LOD
//    n (sample m is LOD0 sample m*2^n), with the axis units;
//  - one variable per Direct, single-component channel (the primary first),
//    NAME_lodN for stored LODs; R32/R64 as float/double, U32/U64 as uint/
//    uint64, U8/U16 as the stored codes (ubyte/ushort) with scale_factor and
//    add_offset (float) from integerScale/integerOffset, 1-bit as ubyte 0/1;
//    useNoValue -> _FillValue (U8/U16: the NoValue code 255/65535); units.
//  - layout metadata entries as global attributes CATEGORY_NAME.
// PerTrace and multi-component channels are left out. Wavelet-compressed
// layers are refused with a FormatError naming the layer.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "io/confined_open.hpp"
#include "io/open_file.hpp"

namespace ncafs::vds {

bool has_vds_signature(std::span<const uint8_t> first_bytes);

// path: a container file or a directory in the object-store form.
// Throws SourceError (unreadable) or FormatError (bad container, layout or layer).
Dataset open_vds_dataset(const std::string& path);
// A container already opened (confined, by the catalog or the dataset cache).
Dataset open_vds_dataset(std::shared_ptr<const OpenFile> file);
// A directory-form volume already opened (confined, by the catalog); its
// members are opened from that fd without following symlinks.
Dataset open_vds_directory(UniqueFd directory, const std::string& path);

// The member files a directory-form volume's dataset is read from
// (VolumeDataLayout, LayerStatus, chunk objects, hash pages), listed now
// from its folder; empty for any other dataset. The caller check under
// allow_other tests each of them for the caller.
std::vector<std::string> vds_member_files(const Dataset& dataset);

}  // namespace ncafs::vds
