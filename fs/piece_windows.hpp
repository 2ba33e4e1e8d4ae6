// A view range split into windows whose pieces hold a bounded number of
// files open. Every file extent keeps its partition's descriptor until the
// bytes are read, and interleaved record variables put a value of another
// partition every few bytes: one 1 MiB range of a view over one-step
// partitions would hold thousands of descriptors at once, beyond open_files
// and RLIMIT_NOFILE. Windows return their descriptors (to the dataset
// cache, which bounds those it keeps) before the next window opens more, and
// all requests together hold at most a budget of such files at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "codecs/virtual_file.hpp"
#include "fs/read_context.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

// The plan of one read: vf.pieces(offset, length), checked to cover the
// range in order (plan_read, fs/view_read.hpp).
struct ReadPlan {
    uint64_t offset = 0;
    uint64_t length = 0;
    std::vector<ViewPiece> pieces;
};

// Files held by the windows of every request in flight (at most half of
// open_files). A window whose files would pass the budget gives its
// pieces back and waits for others to finish; it holds nothing while it
// waits, so waits cannot form a cycle, and a window alone is always let
// through.
class FileBudget {
public:
    static FileBudget& shared();
    bool try_take(size_t files);
    void wait_for(size_t files);
    void give_back(size_t files);

private:
    static size_t limit();
    Mutex mutex_;  // lock order: before DatasetCache::mutex_ (limit() asks the cache's capacity)
    std::condition_variable released_;
    size_t held_ NCAFS_GUARDED_BY(mutex_) = 0;
};

// Local files held by the pieces of one window, counted against a
// FileBudget (that of every request in flight) until destroyed.
class FileLease {
public:
    FileLease() = default;
    FileLease(FileBudget& budget, size_t files) : budget_(&budget), files_(files) {}
    FileLease(FileLease&& other) noexcept : budget_(other.budget_), files_(other.files_) { other.files_ = 0; }
    FileLease& operator=(FileLease&& other) noexcept;
    FileLease(const FileLease&) = delete;
    FileLease& operator=(const FileLease&) = delete;
    ~FileLease();

private:
    FileBudget* budget_ = nullptr;
    size_t files_ = 0;
};

// The number of distinct files one window may draw on: a quarter of the
// dataset cache's bound (open_files), at least 4.
size_t files_per_window();

// Calls consume(pieces) for consecutive windows covering the plan in order:
// each window's pieces, realized (append_realized: the runs' files opened,
// side by side on the kept pool where they are partitions, ctx.parallel_opens
// at once), draw on at most files_per_window() distinct local files
// (except a window of one planned piece) and hold a lease on them, from
// ctx's budget, while consumed.
void for_each_window(const ReadPlan& plan, const ReadContext& ctx,
                     const std::function<void(std::vector<ViewPiece>&&)>& consume);

// The realized pieces of the whole plan with their lease, when together
// they draw on at most files_per_window() distinct files; else nullopt
// (the descriptors opened on the way are returned before it returns; a
// plan with more runs of partitions than that opens none).
struct LeasedPieces {
    std::vector<ViewPiece> pieces;
    FileLease lease;
};
std::optional<LeasedPieces> pieces_within(const ReadPlan& plan, const ReadContext& ctx);

}  // namespace ncafs::fs
