// Chunk geometry of one layer (openvds-notes.md §2.5, §2.6): brick stride
// from the brick size minus margins (times the 2-D multiplier for tiles),
// shifted by the LOD, clamped to the axis. Dims outside the dimension group
// get one-sample chunks at every LOD (nChunks = N, as OpenVDS), each chunk
// holding its LOD0 sample's slice (`shift` 0: what a chunk stores). Read
// as OpenVDS's VolumeDataAccess does, a LOD n layer is sampled every 2^n-th
// sample along every dim but the forced full-resolution one (`view_shift`),
// outside the group too: only the chunks of LOD0 samples m*2^n are read.
// All chunk coordinates are in LOD0 voxel units; a voxel is taken from the
// chunk whose valid part holds it.
#pragma once

#include <cstdint>
#include <vector>

#include "codecs/vds/vds_layout.hpp"

namespace ncafs::vds {

struct LayerGeometry {
    std::vector<int> group;        // VDS dims of the chunk, fastest first
    int lod = 0;
    std::vector<int64_t> samples;  // LOD0 samples per VDS dim
    std::vector<int> shift;        // LOD shift of a chunk's samples per dim (0 outside the group, full-resolution dim)
    std::vector<int> view_shift;   // LOD shift of the layer as read (0 only for the full-resolution dim)
    std::vector<int64_t> stride, chunks, negative, positive;
    uint64_t chunk_count = 1;

    size_t rank() const { return samples.size(); }
    bool in_group(int d) const;
    // Samples along d the layer's chunks hold together (all N outside the group).
    int64_t lod_samples(int d) const { return ((samples[d] - 1) >> shift[d]) + 1; }
    // Samples along d of the layer as read: ((N - 1) >> view_shift) + 1.
    int64_t view_samples(int d) const { return ((samples[d] - 1) >> view_shift[d]) + 1; }
    // Chunk extent including margins, LOD0 units: [lo, hi).
    int64_t chunk_lo(int d, int64_t i) const { return i * stride[d]; }
    int64_t chunk_hi(int d, int64_t i) const;
    // Samples stored along d for chunk i at this LOD.
    int64_t stored(int d, int64_t i) const { return ((chunk_hi(d, i) - chunk_lo(d, i) - 1) >> shift[d]) + 1; }
    // The chunk whose valid part holds LOD0 coordinate x.
    int64_t chunk_of(int d, int64_t x) const;
    // First index (as read) of the valid part of chunk i and one past its
    // last; equal when the chunk holds no sample read at this LOD.
    int64_t valid_first(int d, int64_t i) const;
    int64_t valid_end(int d, int64_t i) const;
};

// True when dim d of a layer is sampled every 2^n-th sample at LOD n >= 1,
// as OpenVDS reads it: every dim but the forced full-resolution one.
bool decimated(const Layout& layout, int d);

// group: VDS dims (ascending, distinct, < axes, 2 or 3 of them); checked by the caller.
LayerGeometry make_geometry(const Layout& layout, const std::vector<int>& group, int lod);

}  // namespace ncafs::vds
