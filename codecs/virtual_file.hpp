// VirtualFile: a file whose bytes are computed on demand. Layouts (CDF, ds,
// ncstream) build one from a Dataset; the FUSE layer and `export` read it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "codecs/array_source.hpp"

namespace ncafs {

// A part of a requested byte range: either bytes already in a file (extent,
// which can be spliced or pread directly) or bytes to compute with read().
struct ViewPiece {
    uint64_t offset = 0;  // in the virtual file
    uint64_t length = 0;
    std::optional<FileExtent> extent;
};

class VirtualFile {
public:
    virtual ~VirtualFile() = default;
    // Known from metadata alone.
    virtual uint64_t size() const = 0;
    // Fills out with the bytes at [offset, offset+out.size()); the range must
    // lie inside the file. Throws SourceError when the data cannot be produced.
    virtual void read(uint64_t offset, std::span<uint8_t> out) const = 0;
    // The range split into pieces in order; the default is one computed piece.
    virtual std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const {
        return {ViewPiece{offset, length, std::nullopt}};
    }
};

}  // namespace ncafs
