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
#include "fs/read_path.hpp"

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

// Calls consume(pieces) for consecutive windows covering the plan in order:
// each window's pieces, realized (append_realized: the runs' files opened,
// side by side on the kept pool where they are partitions), draw on at
// most files_per_window() distinct local files (except a window of one
// planned piece) and hold a lease on them while consumed.
void for_each_window(const ReadPlan& plan, const std::function<void(std::vector<ViewPiece>&&)>& consume);

// The realized pieces of the whole plan with their lease, when together
// they draw on at most files_per_window() distinct files; else nullopt
// (the descriptors opened on the way are returned before it returns; a
// plan with more runs of partitions than that opens none).
struct LeasedPieces {
    std::vector<ViewPiece> pieces;
    FileLease lease;
};
std::optional<LeasedPieces> pieces_within(const ReadPlan& plan);

}  // namespace ncafs::fs
