// Where a VDS volume's bytes live, behind one interface: the single-file
// container (.vds, vds_container.hpp) or the object-store directory form
// (openvds-notes.md §2.9: VolumeDataLayout, LayerStatus, <layer>/<chunk>,
// <layer>/ChunkMetadata/<page>). A LayerStore answers a chunk's 8-byte hash
// and reads its stored object; both check every size against the bytes
// present and throw FormatError naming the file. Immutable, thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/confined_open.hpp"
#include "io/open_file.hpp"
#include "codecs/vds/vds_chunk.hpp"

namespace ncafs::vds {

struct StoredObject {
    std::vector<uint8_t> bytes;
    std::string file;     // for messages
    uint64_t offset = 0;  // of the object in `file`
};

class LayerStore {
public:
    virtual ~LayerStore() = default;
    virtual uint64_t chunk_count() const = 0;
    virtual Compression compression() const = 0;
    virtual uint64_t hash(uint64_t index) const = 0;       // 0 when never written
    // FormatError when absent, or when longer than max_bytes (decided from
    // the index or fstat, before the object is read).
    virtual StoredObject read(uint64_t index, uint64_t max_bytes) const = 0;
    // Checks the layer's index once its chunk count agrees with the layout
    // (a count from the file alone must not size any work).
    virtual void check_index() const {}
};

class VolumeStore {
public:
    virtual ~VolumeStore() = default;
    virtual const std::string& path() const = 0;
    virtual FileIdentity identity() const = 0;  // keys the chunk cache
    virtual std::string layout_text() const = 0;
    virtual std::vector<std::string> layer_names() const = 0;
    // nullptr when absent; FormatError naming the layer when it cannot be
    // read (Wavelet, unknown compression, bad page table).
    virtual std::shared_ptr<const LayerStore> layer(const std::string& name) const = 0;
    // The files besides path() whose bytes the volume is read from (empty
    // for a container: it is one file): VolumeDataLayout, LayerStatus and,
    // per listed layer, its chunk objects and hash pages found now.
    virtual std::vector<std::string> member_files() const { return {}; }
};

std::shared_ptr<const VolumeStore> open_container_store(const std::string& path);
std::shared_ptr<const VolumeStore> open_container_store(std::shared_ptr<const OpenFile> file);
std::shared_ptr<const VolumeStore> open_directory_store(const std::string& path);
// A directory already opened (confined, by the catalog): every member is
// opened from this fd without following symlinks, regular files only.
std::shared_ptr<const VolumeStore> open_directory_store(UniqueFd directory, const std::string& path);

// Reads a whole small file (at most max_bytes) with its identity checked.
std::vector<uint8_t> read_small_file(const std::string& path, uint64_t max_bytes);
std::vector<uint8_t> read_small_file(const OpenFile& file, uint64_t max_bytes);

}  // namespace ncafs::vds
