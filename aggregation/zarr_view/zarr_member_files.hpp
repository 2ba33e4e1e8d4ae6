// The files of the `.zarr` view: metadata (the layout's JSON text) and
// chunks. A chunk's bytes are the values of its run of the variable
// (zarr_grid.hpp) in the layout's byte order, then the fill value up to the
// whole chunk (Zarr v2 stores edge chunks whole). Where they are big-endian
// and the variable's source gives its values unconverted, the run is
// planned as a SourceRun, so the mount's
// read path splices it from a classic file where the bytes lie there as
// they are (as for the `.nc` view); otherwise it is computed through the
// source (the dataset's read path), as the `.nc` view computes it. A
// chunk passed through (ZarrArray::stored) is the stored chunk's bytes,
// an extent of the variable's file.
#pragma once

#include <memory>

#include "aggregation/zarr_view/zarr_store_layout.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs::agg::zarr_view {

// The file of a Metadata or Chunk member of `layout`; throws UsageError for a folder.
std::shared_ptr<const VirtualFile> zarr_member_file(std::shared_ptr<const ZarrStoreLayout> layout,
                                                    const ZarrMember& member);

}  // namespace ncafs::agg::zarr_view
