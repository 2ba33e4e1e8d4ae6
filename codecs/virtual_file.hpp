// VirtualFile: a file whose bytes are computed on demand. Layouts (CDF, ds,
// ncstream) build one from a Dataset; the FUSE layer and `export` read it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "codecs/array_source.hpp"

namespace ncafs {

// Bytes of a view that may lie in a file exactly as the view needs them:
// the big-endian elements [first, first + count) of source. Whether they do
// is known only once the source's file is opened (its big_endian_extents).
struct SourceRun {
    const ArraySource* source = nullptr;  // held by the VirtualFile's dataset
    uint64_t first = 0;
    uint64_t count = 0;
};

// A part of a requested byte range: bytes already in an open file (extent,
// which can be spliced or pread directly), a run of a source (planned: read
// from its file when it lies there as it is, else computed), or bytes to
// compute with read().
struct ViewPiece {
    uint64_t offset = 0;  // in the virtual file
    uint64_t length = 0;
    std::optional<FileExtent> extent;
    std::optional<SourceRun> run;  // never with extent
};

// Bytes of a view that lie in memory the VirtualFile holds (its cache):
// valid while `keeps` is held (null: memory of the VirtualFile itself,
// valid while it lives).
struct HeldBytes {
    std::shared_ptr<const void> keeps;
    const uint8_t* data = nullptr;
    size_t size = 0;
};

class VirtualFile {
public:
    virtual ~VirtualFile() = default;
    // Known from metadata alone.
    virtual uint64_t size() const = 0;
    // Fills out with the bytes at [offset, offset+out.size()); the range must
    // lie inside the file. Throws SourceError when the data cannot be produced.
    virtual void read(uint64_t offset, std::span<uint8_t> out) const = 0;
    // The plan of a read: the range split into pieces in order, from
    // metadata alone. Opens no file and reads nothing (a file's bytes are
    // named by a SourceRun, opened when read); throws only UsageError, for
    // a range outside the file. The default is one computed piece.
    virtual std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const {
        return {ViewPiece{offset, length, std::nullopt}};
    }
    // Whether read() serves from a cache of its own (the .vds view's chunk
    // objects): the FUSE layer then reads it straight into the reply instead
    // of through its block cache, which would hold and copy the same bytes
    // once more.
    virtual bool caches_its_bytes() const { return false; }
    // Where a VirtualFile that caches its bytes holds [offset, offset+length):
    // pieces in order, produced as read() produces them (same errors), so
    // that the FUSE layer hands them to the reply without copying them
    // first. The default: nullopt, read() them.
    virtual std::optional<std::vector<HeldBytes>> held(uint64_t offset, uint64_t length) const {
        (void)offset, (void)length;
        return std::nullopt;
    }
};

}  // namespace ncafs
