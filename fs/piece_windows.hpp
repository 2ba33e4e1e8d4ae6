// A view range split into windows whose pieces hold a bounded number of
// files open. Every file extent keeps its partition's descriptor until the
// bytes are read, and interleaved record variables put a value of another
// partition every few bytes: one 1 MiB range of a view over one-step
// partitions would hold thousands of descriptors at once, beyond open_files
// and RLIMIT_NOFILE. Windows return their descriptors (to the dataset
// cache, which bounds those it keeps) before the next window opens more, and
// all requests together hold at most a budget of such files at once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "codecs/virtual_file.hpp"

namespace ncafs::fs {

// Local files held by the pieces of one window, counted against the budget
// shared by every request in flight (half of open_files) until destroyed.
class FileLease {
public:
    FileLease() = default;
    explicit FileLease(size_t files) : files_(files) {}
    FileLease(FileLease&& other) noexcept : files_(other.files_) { other.files_ = 0; }
    FileLease& operator=(FileLease&& other) noexcept;
    FileLease(const FileLease&) = delete;
    FileLease& operator=(const FileLease&) = delete;
    ~FileLease();

private:
    size_t files_ = 0;
};

// The number of distinct files one window may draw on: a quarter of the
// dataset cache's bound (open_files), at least 4.
size_t files_per_window();

// Calls consume(pieces) for consecutive windows covering [offset, offset +
// length) in order; each window's pieces (merged_pieces) draw on at most
// files_per_window() distinct files, except a window of the smallest size
// (64 bytes), taken whole, and hold a lease on them while consumed. Window
// sizes adapt: they grow over bytes of few files and shrink over
// interleaved records.
void for_each_window(const VirtualFile& vf, uint64_t offset, uint64_t length,
                     const std::function<void(std::vector<ViewPiece>&&)>& consume);

// The pieces of the whole range with their lease, when together they draw
// on at most files_per_window() distinct files; else nullopt (the
// descriptors opened on the way are returned before it returns).
struct LeasedPieces {
    std::vector<ViewPiece> pieces;
    FileLease lease;
};
std::optional<LeasedPieces> pieces_within(const VirtualFile& vf, uint64_t offset, uint64_t length);

}  // namespace ncafs::fs
