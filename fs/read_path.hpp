// Reading a byte range of a view: planned once from metadata
// (VirtualFile::pieces), then read; a retry and the block fallback reuse
// the plan. Runs of sources are opened when read (in windows that bound
// the descriptors held, fs/piece_windows.hpp); bytes that lie in a file
// are read with one pread per contiguous extent (or handed to the kernel
// for splice by the FUSE layer); extents of remote objects are fetched by
// range, several of one object in one read_many; the rest is computed by
// the VirtualFile.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "codecs/virtual_file.hpp"

namespace ncafs::fs {

// The plan of one read: vf.pieces(offset, length), checked to cover the
// range in order.
struct ReadPlan {
    uint64_t offset = 0;
    uint64_t length = 0;
    std::vector<ViewPiece> pieces;
};

// Throws UsageError when the range lies outside the file or the pieces do
// not cover it in order; nothing else (no file is opened).
ReadPlan plan_read(const VirtualFile& vf, uint64_t offset, uint64_t length);

// Reads realized pieces (no runs) that continue the range at offset +
// covered into out (which starts at `offset` of the view); advances covered.
void read_pieces(const VirtualFile& vf, const std::vector<ViewPiece>& pieces, uint64_t offset, uint64_t& covered,
                 std::span<uint8_t> out);

// Fills out (plan.length bytes) with the planned range of vf. Throws
// SourceError (naming the file) when a byte cannot be produced; never
// returns fewer bytes. A failure is tried once more with the same plan: a
// partition that changed is marked by the first try, and the second opens
// its path again and reads the version there now.
void read_view(const VirtualFile& vf, const ReadPlan& plan, std::span<uint8_t> out);
// The same, planned here: bytes [offset, offset + out.size()) of vf.
void read_view(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out);

// Where vf holds bytes [offset, offset + length) in memory of its own
// (VirtualFile::held), tried once more like read_view; nullopt when it does
// not hold them.
std::optional<std::vector<HeldBytes>> held_view_bytes(const VirtualFile& vf, uint64_t offset, uint64_t length);

}  // namespace ncafs::fs
