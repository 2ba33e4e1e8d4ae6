// Builds the netCDF view of a VDS layout (the mapping of vds_reader.hpp):
// dimensions per LOD named after the axes, decimated coordinate variables,
// one variable per channel layer with units/_FillValue/scale_factor/
// add_offset, and the layout's metadata entries as global attributes.
// Names are made legal netCDF names and unique.
#pragma once

#include <memory>
#include <string>

#include "codecs/dataset.hpp"
#include "codecs/vds/vds_layer_source.hpp"
#include "codecs/vds/vds_layout.hpp"

namespace ncafs::vds {

class DatasetBuilder {
public:
    DatasetBuilder(std::string path, const Layout& layout);
    // The variable of one channel at one LOD (NAME or NAME_lodN); creates the
    // LOD's dimensions and coordinate variables on first use.
    void add_channel(const Channel& channel, int lod, std::shared_ptr<const ArraySource> source);
    void add_metadata();
    Dataset finish() { return std::move(dataset_); }

private:
    std::vector<size_t> dimensions_of_lod(int lod);
    std::string unique_variable_name(std::string name) const;

    const Layout& layout_;
    Dataset dataset_;
    std::vector<std::vector<size_t>> lod_dims_;  // per LOD: dimids in netCDF order (empty = not made yet)
};

// A legal netCDF name: '/' and control characters -> '_', empty -> fallback.
std::string legal_name(const std::string& name, const std::string& fallback);

}  // namespace ncafs::vds
