// The samples of LODs 1..N of one .vds channel, kept while its LOD0
// batches are made, so that LOD n chunks come from them instead of reading
// (and decompressing, conforming) the source again. In file order every
// LOD0 chunk comes before the first LOD1 chunk: the store holds LODs 1..N
// whole (1/8 + 1/64 + ... of the volume in 3-D), so only channels under a
// process-wide budget get one; the others read the source at every LOD.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "codecs/vds/vds_writer_chunks.hpp"
#include "io/mutex.hpp"

namespace ncafs::vds {

// Bytes all stores of the process may hold.
constexpr uint64_t kLodStoreBudget = uint64_t{64} << 20;

class LodStore {
public:
    // layers[n]: the geometry of LOD n (n = 0..N, N >= 1); es: source
    // element size. Null when N is 0 or the store would pass the budget.
    static std::unique_ptr<LodStore> make(std::vector<LayerGeometry> layers, size_t es);
    ~LodStore();
    LodStore(const LodStore&) = delete;
    LodStore& operator=(const LodStore&) = delete;

    // Keeps the LOD 1..N samples of LOD0 chunks [first, end), whose source
    // samples (netCDF C order over `box`, step 1) are `samples`.
    void keep(uint64_t first, uint64_t end, const ChunkBox& box, const uint8_t* samples);
    // The samples of `box` of LOD n (netCDF C order, box.stored) into out
    // when every LOD0 chunk under it was kept; false otherwise.
    bool take(int lod, const ChunkBox& box, uint8_t* out) const;

private:
    LodStore(std::vector<LayerGeometry> layers, size_t es, uint64_t bytes);
    bool all_kept(const ChunkBox& box) const NCAFS_REQUIRES(mutex_);

    std::vector<LayerGeometry> layers_;
    size_t es_;
    uint64_t bytes_;  // reserved from the budget
    mutable Mutex mutex_;
    std::vector<std::vector<uint8_t>> levels_ NCAFS_GUARDED_BY(mutex_);  // [n-1]: LOD n, netCDF C order over lod_samples
    std::vector<bool> kept_ NCAFS_GUARDED_BY(mutex_);  // per LOD0 chunk
};

}  // namespace ncafs::vds
