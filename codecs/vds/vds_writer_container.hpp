// The byte layout of a .vds view (notes §2.10, compression None): header,
// the layout JSON, the file table, then per file its page directory and full
// index pages, then the data chunk objects in layer and chunk order. Every
// offset follows from the plan and the chunk kinds, which come from metadata
// (uniform_value) alone, so the layout is built without reading any data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/virtual_file.hpp"
#include "codecs/vds/vds_geometry.hpp"
#include "codecs/vds/vds_writer_plan.hpp"

namespace ncafs::vds {

struct WrittenLayer {
    std::string name;  // §2.4: [channel name]Dimensions_<group>LOD<n>
    size_t channel = 0;
    LayerGeometry geometry;
};

struct DataObject {
    uint64_t offset = 0, size = 0;  // in the container
    uint32_t layer = 0;
    uint64_t chunk = 0;
};

// Bytes of the prefix that are not all zeros.
struct PrefixRun {
    uint64_t offset = 0;  // in the container
    std::vector<uint8_t> bytes;
};

struct ContainerLayout {
    // Every byte before the first data object: these runs (by offset, apart),
    // zeros between them. Only the entries of a layer's chunks are held, not
    // the zero rest of its last index page (24 KiB a layer).
    std::vector<PrefixRun> prefix;
    uint64_t prefix_size = 0;
    std::vector<WrittenLayer> layers;
    std::vector<DataObject> objects;   // sorted by offset, contiguous from prefix_size
    uint64_t size = 0;
};

// A view past this many chunks in all layers is refused (its index pages live in memory).
constexpr uint64_t kMaxViewChunks = uint64_t{1} << 20;

// Chunks of every layer of the plan (saturating), without building anything.
uint64_t view_chunk_count(const WriterPlan& plan);

// What build_container would hold in memory, from the plan alone.
uint64_t container_memory(const WriterPlan& plan);

// Throws UsageError when the chunk count exceeds kMaxViewChunks. Counts
// what it holds (io/metadata_budget.hpp) before building it.
ContainerLayout build_container(const WriterPlan& plan);

// Bytes [offset, offset + length) of the prefix, as pieces of the layout's
// runs and of a shared block of zeros (valid while the layout lives).
void prefix_pieces(const ContainerLayout& layout, uint64_t offset, uint64_t length,
                   std::vector<HeldBytes>& pieces);

}  // namespace ncafs::vds
