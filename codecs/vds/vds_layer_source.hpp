// The values of one VDS layer (channel x dimension group x LOD) as an
// ArraySource over the netCDF dimensions: the VDS dims reversed, so that VDS
// dim 0 (fastest) is the last index. A read visits only the chunks whose
// valid part meets the box; unwritten, NoValue and constant chunks are
// answered from the hash without reading; stored chunks are decoded through
// the bounded chunk cache. U8/U16 keep their codes; 1-bit reads as 0/1.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "codecs/array_source.hpp"
#include "codecs/vds/vds_chunk.hpp"
#include "codecs/vds/vds_chunk_cache.hpp"
#include "codecs/vds/vds_geometry.hpp"
#include "codecs/vds/vds_store.hpp"

namespace ncafs::vds {

struct LayerInfo {
    std::string name;  // e.g. "Dimensions_012LOD1"
    std::shared_ptr<const LayerStore> store;
    LayerGeometry geometry;
    Channel channel;
};

// The netCDF type a channel's values are served as.
NcType nc_type_of(Format f);
// One element of the channel's type (native order) for a chunk status:
// NoValue/unwritten -> the channel's noValue (U8/U16: the top code when
// useNoValue), constant -> the float32 value (U8/U16 re-quantised).
std::array<uint8_t, 8> status_element(const Channel& c, const ChunkStatus& s);

class VdsLayerSource final : public ArraySource {
public:
    VdsLayerSource(std::shared_ptr<const VolumeStore> volume, LayerInfo info);
    NcType type() const override { return type_; }
    const VolumeStore& volume() const { return *volume_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;

private:
    struct Box;
    void copy_chunk(const std::vector<int64_t>& chunk, const Box& box, uint8_t* out) const;
    DecodedChunk load(uint64_t index, const std::vector<int64_t>& chunk) const;
    ChunkShape chunk_shape(const std::vector<int64_t>& chunk) const;

    std::shared_ptr<const VolumeStore> volume_;
    LayerInfo info_;
    NcType type_;
    size_t element_size_;
    std::vector<uint64_t> shape_;
};

}  // namespace ncafs::vds
