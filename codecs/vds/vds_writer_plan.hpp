// What a .vds view of a dataset holds (docs/formats/vds-writer.md): the
// largest variable of rank 2..6 with a VDS type as the primary channel (or,
// when there is none, the largest of rank 1, with a second axis of one
// sample), the variables of the same dimensions as further channels, one
// axis per dimension (reversed: VDS dim 0 = last netCDF dim), brick 64
// without margins, LODs 1..N by decimation. Decided from metadata alone (plus the
// 1-D coordinate variables, to test for even spacing).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/vds/vds_layout.hpp"

namespace ncafs::vds {

struct WriterChannel {
    size_t variable = 0;                      // index into Dataset::variables
    std::shared_ptr<const ArraySource> source;  // its values, over the volume's axes (netCDF order)
    NcType source_type = NcType::Float;
    std::optional<std::vector<uint8_t>> fill;  // the variable's _FillValue element (native), when NoValue is used
    float range_min = -1, range_max = 1;       // valueRange: valid_range/actual_range, else the codes' range
};

struct WriterPlan {
    Layout layout;                       // axes, channels, brick, LODs, metadata
    std::vector<WriterChannel> channels;  // same order as layout.channels
    std::vector<int> group;              // {0,1} (tiles) or {0,1,2} (bricks)
    std::vector<std::string> omitted;    // "NAME: reason" of same-shaped variables left out
};

constexpr int kMaxVdsLods = 12;  // LODLevels_12

// nullopt when no variable can be represented (reason in *why).
// may_read_coordinates (when given) says whether a coordinate variable's
// values may be read (to test for even spacing); else index coordinates.
std::optional<WriterPlan> plan_vds(const Dataset& dataset, int lods, std::string* why,
                                   const std::function<bool(const ArraySource&)>& may_read_coordinates = {});

// The VolumeDataLayout JSON (notes §2.2), keys sorted, 4-space indent.
std::string layout_json(const WriterPlan& plan);

}  // namespace ncafs::vds
