// Reading a byte range of a view: bytes that already lie in a file are read
// with one pread per contiguous extent (or handed to the kernel for splice by
// the FUSE layer); extents of remote objects are fetched by range, several
// of one object in one read_many; the rest is computed by the VirtualFile.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "codecs/virtual_file.hpp"

namespace ncafs::fs {

// vf.pieces() with adjacent extents of the same file that are contiguous on
// disk merged into one, so that a read inside one partition is one pread.
std::vector<ViewPiece> merged_pieces(const VirtualFile& vf, uint64_t offset, uint64_t length);

// Appends pieces to merged, joining an extent to the last one where they
// continue each other in the same file.
void append_merged(std::vector<ViewPiece>& merged, std::vector<ViewPiece>&& pieces);

// Fills out with bytes [offset, offset + out.size()) of vf, which must lie
// inside the file. Throws SourceError (naming the file) when a byte cannot be
// produced; never returns fewer bytes.
void read_view(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out);

}  // namespace ncafs::fs
