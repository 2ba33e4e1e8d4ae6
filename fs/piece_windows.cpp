#include "fs/piece_windows.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "fs/backend.hpp"
#include "fs/read_path.hpp"

namespace ncafs::fs {

namespace {

constexpr uint64_t kMinWindow = 64;
constexpr uint64_t kMaxWindow = uint64_t{1} << 20;
constexpr uint64_t kMaxGrowth = 8;  // per window, so that one dense stretch cannot overshoot far

size_t open_files_bound() { return shared_dataset_cache().capacity(); }

// Files held by the windows of every request in flight. A window whose files
// would pass the budget gives its pieces back and waits for others to
// finish; it holds nothing while it waits, so waits cannot form a cycle,
// and a window alone is always let through.
class FileBudget {
public:
    static FileBudget& shared() {
        static FileBudget budget;
        return budget;
    }
    bool try_take(size_t files) {
        std::lock_guard lock(mutex_);
        if (held_ > 0 && held_ + files > limit()) return false;
        held_ += files;
        return true;
    }
    void wait_for(size_t files) {
        std::unique_lock lock(mutex_);
        released_.wait(lock, [&] { return held_ == 0 || held_ + files <= limit(); });
    }
    void give_back(size_t files) {
        {
            std::lock_guard lock(mutex_);
            held_ -= files;
        }
        released_.notify_all();
    }

private:
    static size_t limit() { return std::max(files_per_window(), open_files_bound() / 2); }
    std::mutex mutex_;  // lock order: before DatasetCache::mutex_ (limit() asks the cache's capacity)
    std::condition_variable released_;
    size_t held_ = 0;
};

size_t local_files(const std::vector<ViewPiece>& pieces) {
    std::vector<const OpenFile*> files;
    for (const auto& p : pieces)
        if (p.extent && p.extent->file && !p.extent->file->is_remote()) files.push_back(p.extent->file.get());
    std::sort(files.begin(), files.end());
    return static_cast<size_t>(std::unique(files.begin(), files.end()) - files.begin());
}

// 16 bytes a file: interleaved records are rarely smaller (a time and a
// value), so the first window seldom draws on more than the bound.
uint64_t first_window(size_t max_files) {
    return std::clamp<uint64_t>(uint64_t{16} * max_files, kMinWindow, kMaxWindow);
}

// The next window's size after one of `window` bytes drew on `files` files.
uint64_t next_window(uint64_t window, size_t files, size_t max_files) {
    const uint64_t scaled = files == 0 ? window * kMaxGrowth : window * max_files / files;
    return std::clamp(std::min(scaled, window * kMaxGrowth), kMinWindow, kMaxWindow);
}

struct Window {
    std::vector<ViewPiece> pieces;
    FileLease lease;
    size_t files = 0;
};

// The pieces of [at, at + n) with a lease on their files, or nullopt when
// they draw on more than max_files and a smaller window should be tried.
std::optional<Window> leased_window(const VirtualFile& vf, uint64_t at, uint64_t n, size_t max_files) {
    for (;;) {
        Window w;
        w.pieces = merged_pieces(vf, at, n);
        w.files = local_files(w.pieces);
        if (w.files > max_files && n > kMinWindow) return std::nullopt;
        if (FileBudget::shared().try_take(w.files)) {
            w.lease = FileLease(w.files);
            return w;
        }
        w.pieces.clear();  // the descriptors go back before waiting
        FileBudget::shared().wait_for(w.files);
    }
}

}  // namespace

FileLease& FileLease::operator=(FileLease&& other) noexcept {
    if (this != &other) {
        if (files_) FileBudget::shared().give_back(files_);
        files_ = other.files_;
        other.files_ = 0;
    }
    return *this;
}

FileLease::~FileLease() {
    if (files_) FileBudget::shared().give_back(files_);
}

size_t files_per_window() { return std::max<size_t>(4, open_files_bound() / 4); }

void for_each_window(const VirtualFile& vf, uint64_t offset, uint64_t length,
                     const std::function<void(std::vector<ViewPiece>&&)>& consume) {
    const size_t max_files = files_per_window();
    const uint64_t end = offset + length;
    uint64_t window = first_window(max_files);
    for (uint64_t at = offset; at < end;) {
        const uint64_t n = std::min(window, end - at);
        auto w = leased_window(vf, at, n, max_files);
        if (!w) {
            window = std::max(kMinWindow, n / 4);
            continue;
        }
        consume(std::move(w->pieces));
        at += n;
        window = next_window(n, w->files, max_files);
    }
}

std::optional<LeasedPieces> pieces_within(const VirtualFile& vf, uint64_t offset, uint64_t length) {
    const size_t max_files = files_per_window();
    std::vector<ViewPiece> all;
    std::vector<const OpenFile*> held;
    const uint64_t end = offset + length;
    uint64_t window = first_window(max_files);
    for (uint64_t at = offset; at < end;) {  // in windows, so that a dense stretch stops it early
        const uint64_t n = std::min(window, end - at);
        auto pieces = merged_pieces(vf, at, n);
        const size_t before = held.size();
        for (const auto& p : pieces)
            if (p.extent && p.extent->file && !p.extent->file->is_remote()) held.push_back(p.extent->file.get());
        std::sort(held.begin(), held.end());
        held.erase(std::unique(held.begin(), held.end()), held.end());
        if (held.size() > max_files) return std::nullopt;
        append_merged(all, std::move(pieces));  // a file's run across windows stays one pread
        at += n;
        window = next_window(n, held.size() - std::min(before, held.size()), max_files);
    }
    if (!FileBudget::shared().try_take(held.size())) return std::nullopt;  // busy: the windowed way waits its turn
    return LeasedPieces{std::move(all), FileLease(held.size())};
}

}  // namespace ncafs::fs
