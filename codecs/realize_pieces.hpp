// A read's plan (VirtualFile::pieces) made real: each run of a source
// becomes the extents of its file, opened now, or a computed piece.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "codecs/virtual_file.hpp"

namespace ncafs {

// Appends planned piece p as read: a run becomes the extents of its
// source's file (opened now: may throw SourceError) where its bytes lie
// there as they are, else one computed piece; other pieces as they are.
// Joins an extent to the last one where they continue each other in the
// same file, so that a read inside one partition is one pread.
void append_realized(std::vector<ViewPiece>& out, const ViewPiece& p);
// The same for a run whose extents its source gave already (nullopt: the
// run is computed).
void append_run(std::vector<ViewPiece>& out, const ViewPiece& p, std::optional<std::vector<FileExtent>> extents);

// vf.pieces(offset, length), every piece realized at once: for readers of
// views over few files (tests, a check of one file). Reads of views over
// many partitions go through fs/piece_windows.hpp, which bounds the
// descriptors held.
std::vector<ViewPiece> realize_all(const VirtualFile& vf, uint64_t offset, uint64_t length);

}  // namespace ncafs
