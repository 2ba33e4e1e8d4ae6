// The Zarr v2 store that the `.zarr` folder view of a dataset shows: one
// array per variable of the `.nc` view (same name, values, attributes), its
// `.zarray` (chunk grid of zarr_grid.hpp, no compressor, big-endian dtype
// where the values may lie in classic files, to be spliced from them, else
// little-endian, as most readers prefer)
// and `.zattrs` (with `_ARRAY_DIMENSIONS`), the group's `.zgroup`, `.zattrs`
// and consolidated `.zmetadata`. Made from metadata alone; chunks are never
// enumerated: their names are computed from their index (a listing asks for
// entry i), a lookup parses a name back to an index. Memory: the metadata
// texts (each array's, and `.zmetadata` once asked for: about twice the
// size of the consolidated metadata), nothing per chunk.
// A netCDF-4 variable whose chunks are only deflated (after a shuffle or
// not) keeps them: its array has the file's chunk grid and byte order,
// compressor zlib, filter shuffle, each chunk file the stored chunk's bytes
// (spliced), chunks never written absent (its fill_value is the file's
// fill). Only in v2, and only where the chunk index is the dataset file's
// own metadata (a netCDF-4 file, not an aggregation's partitions).
// A computed chunk that an aggregation file declares to hold only the
// fill_value (missing or constant fragments) is absent too.
// Zarr v3 (format 3): a `zarr.json` per node (the array's with its
// attributes and `dimension_names`, the `bytes` codec, chunk key encoding
// `default`: chunks `VAR/c/0/1`, one folder per index but the last), char
// variables as `uint8`, every array with a fill_value (the variable's
// `_FillValue`, else its type's default fill); the same chunk bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aggregation/zarr_view/zarr_grid.hpp"
#include "codecs/dataset.hpp"
#include "codecs/deflated_chunks.hpp"

namespace ncafs::agg::zarr_view {

struct ZarrArray {
    const Variable* variable = nullptr;  // of the layout's dataset
    ZarrGrid grid;
    std::vector<uint8_t> fill_stored;  // one element in the chunks' byte order: the padding of edge chunks
    std::string zarray, zattrs;  // v2; v3: zarray holds the array's zarr.json
    // v2: the chunks as the variable's netCDF-4 file stores them (zlib, shuffle),
    // its grid the file's; a chunk never written is absent. Null: computed.
    std::shared_ptr<const DeflatedChunks> stored;
    // Computed: the fill_value (native order) a chunk is left absent for when
    // the variable's source knows from metadata alone that it holds only
    // that value (ArraySource::uniform_value: fragments an aggregation file
    // declares missing or constant); empty: every chunk is there.
    std::vector<uint8_t> absent_value;
    bool has_chunk(uint64_t index) const;
};

// What a path inside the store names.
struct ZarrMember {
    enum class Kind { Folder, Metadata, Chunk } kind = Kind::Folder;
    const ZarrArray* array = nullptr;   // null: the group (the store's root)
    const std::string* text = nullptr;  // Metadata: the file's bytes
    // Chunk: its index (C order over the grid); a v3 chunk folder: the index
    // over the grid's first `depth` dimensions its path names.
    uint64_t chunk = 0;
    bool chunk_folder = false;  // v3: VAR/c or VAR/c/i...
    size_t depth = 0;           // v3 chunk folder: indices in its path
    uint64_t size() const;
};

class ZarrStoreLayout {
public:
    // big_endian: the chunks' byte order (true where values may lie in classic files as they are).
    // format: the Zarr version, 2 or 3. stored_chunks: netCDF-4 chunks passed
    // through where they can be (false: every chunk computed).
    ZarrStoreLayout(std::shared_ptr<const Dataset> dataset, bool big_endian, int format = 2,
                    bool stored_chunks = true);
    bool big_endian() const { return big_endian_; }
    int format() const { return format_; }

    const std::shared_ptr<const Dataset>& dataset() const { return dataset_; }
    const std::vector<ZarrArray>& arrays() const { return arrays_; }
    // Variables left out, one line each (a name no file may have).
    const std::vector<std::string>& notes() const { return notes_; }

    // The member at `path` ("" the root, "VAR", "VAR/.zarray", "VAR/0.1",
    // ".zmetadata"), or nullopt.
    std::optional<ZarrMember> member(const std::string& path) const;
    // The names in a folder member, entry i of count (folder: true for an
    // array's folder; an empty name: a chunk absent from the store, not listed).
    uint64_t listing_size(const ZarrMember& folder) const;
    std::pair<std::string, bool> listing_entry(const ZarrMember& folder, uint64_t i) const;

private:
    const std::string& zmetadata() const;
    std::optional<ZarrMember> v3_member(const std::string& path) const;
    uint64_t v3_listing_size(const ZarrMember& folder) const;
    std::pair<std::string, bool> v3_listing_entry(const ZarrMember& folder, uint64_t i) const;

    std::shared_ptr<const Dataset> dataset_;
    bool big_endian_ = true;
    int format_ = 2;
    bool stored_chunks_ = true;
    std::vector<ZarrArray> arrays_;
    std::unordered_map<std::string, size_t> by_name_;
    std::vector<std::string> notes_;
    std::string zgroup_, zattrs_;  // v3: zgroup_ holds the root zarr.json
    mutable std::once_flag zmetadata_once_;
    mutable std::string zmetadata_;
};

}  // namespace ncafs::agg::zarr_view
