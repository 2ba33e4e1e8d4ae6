// Level-of-detail views of a dataset: LOD n keeps every 2^n-th sample along
// each dimension except the record (unlimited) dimension, the dimensions the
// caller keeps (lod_keep=), the string-length dimension of char variables
// (the last dimension of a char variable) and the vertex dimension of bounds
// variables (the last dimension of a variable named by a `bounds`
// attribute): decimating those would garble text and bounds. Coordinate
// variables share their dimensions and are decimated the same way. Values
// are real samples (StridedSource), never averages. Global attributes
// ncafs_lod_level, ncafs_lod_factor and ncafs_lod_kept_dimensions say what
// was done. Metadata only: nothing is read.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"

namespace ncafs {

// The largest LOD level accepted (factor 2^16).
inline constexpr int kMaxLodLevel = 16;

// True when some variable has rank >= 2 (the datasets that get LOD views).
bool has_lod_views(const Dataset& dataset);

// LOD `level` (1..kMaxLodLevel) of `full`; `keep` names dimensions left
// whole (names not in the dataset are ignored). Throws UsageError for a bad level.
Dataset make_lod_dataset(const Dataset& full, int level, const std::vector<std::string>& keep);

}  // namespace ncafs
