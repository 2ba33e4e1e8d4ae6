#include "fs/piece_windows.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "aggregation/read/dataset_cache.hpp"
#include "codecs/realize_pieces.hpp"
#include "io/mutex.hpp"
#include "io/worker_pool.hpp"
#include "fs/backend.hpp"
#include "fs/read_path.hpp"
#include "remote/network_scope.hpp"

namespace ncafs::fs {

namespace {

// Runs whose sources open files to realize (partitions) are realized this
// many at once on the kept pool: partitions a read needs are opened ahead,
// side by side (a remote one is a round trip).
constexpr size_t kOpenAhead = 16;

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
        MutexLock lock(mutex_);
        if (held_ > 0 && held_ + files > limit()) return false;
        held_ += files;
        return true;
    }
    void wait_for(size_t files) {
        MutexLock lock(mutex_);
        while (held_ != 0 && held_ + files > limit()) lock.wait(released_);
    }
    void give_back(size_t files) {
        {
            MutexLock lock(mutex_);
            held_ -= files;
        }
        released_.notify_all();
    }

private:
    static size_t limit() { return std::max(files_per_window(), open_files_bound() / 2); }
    Mutex mutex_;  // lock order: before DatasetCache::mutex_ (limit() asks the cache's capacity)
    std::condition_variable released_;
    size_t held_ NCAFS_GUARDED_BY(mutex_) = 0;
};

// Distinct local files in pieces, added to held (sorted, unique).
void add_local_files(const std::vector<ViewPiece>& pieces, std::vector<const OpenFile*>& held) {
    for (const auto& p : pieces)
        if (p.extent && p.extent->file && !p.extent->file->is_remote()) held.push_back(p.extent->file.get());
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
}

// Planned pieces [from, to) as read, each piece's realization apart; runs
// whose sources open files are realized side by side on the pool.
std::vector<std::vector<ViewPiece>> realize_each(const ReadPlan& plan, size_t from, size_t to) {
    std::vector<std::vector<ViewPiece>> realized(to - from);
    // Helpers only where two or more pieces open a partition: waking one
    // for pieces whose partitions are open cost more than it saved (a cold
    // read of a netCDF-4-backed view: thread switches were a fifth of the
    // daemon's time).
    bool partitions = false;
    size_t opens = 0;
    for (size_t i = from; i < to && opens < 2; ++i) {
        const auto& run = plan.pieces[i].run;
        if (!run || !run->source->extents_open_files()) continue;
        partitions = true;
        if (run->source->extents_would_open(run->first)) ++opens;
    }
    auto one = [&](size_t k, size_t) { append_realized(realized[k], plan.pieces[from + k]); };
    if (!partitions || realized.size() == 1) {
        for (size_t k = 0; k < realized.size(); ++k) one(k, 0);
        return realized;
    }
    if (opens < 2) {
        ManyRunsScope many;  // this read's runs, known together: no source opens ahead of them
        for (size_t k = 0; k < realized.size(); ++k) one(k, 0);
        return realized;
    }
    const bool network = remote::network_allowed();  // the caller's, on every thread
    WorkerPool::shared().parallel_for(realized.size(), kOpenAhead, [&](size_t k, size_t worker) {
        remote::NetworkScope scope(network);
        ManyRunsScope many;  // opened side by side here: no source opens ahead of them
        one(k, worker);
    });
    return realized;
}

// The realized pieces of the plan from piece `from` on, as far as they
// draw on at most max_files local files (at least one planned piece);
// `next` is the first planned piece left out.
struct Realized {
    std::vector<ViewPiece> pieces;
    size_t files = 0;
    size_t next = 0;
};
Realized realize_from(const ReadPlan& plan, size_t from, size_t max_files) {
    Realized w;
    std::vector<const OpenFile*> held;
    w.next = from;
    while (w.next < plan.pieces.size()) {
        // As many planned pieces as the window has room for files, at the
        // rate of pieces per file seen so far (a record of two variables of
        // one partition: two runs, one file), so that few are realized (and
        // hold a descriptor) in vain and the rest are opened side by side.
        const size_t room = max_files > held.size() ? max_files - held.size() : 1;
        const size_t per_file = held.empty() ? 1 : std::max<size_t>(1, (w.next - from) / held.size());
        const size_t to = std::min(plan.pieces.size(), w.next + room * per_file);
        auto realized = realize_each(plan, w.next, to);
        for (auto& pieces : realized) {
            auto with = held;
            add_local_files(pieces, with);
            if (with.size() > max_files && w.next > from) {  // its files go back: it starts the next window
                w.files = held.size();
                return w;
            }
            held = std::move(with);
            for (auto& p : pieces) append_realized(w.pieces, p);
            ++w.next;
        }
    }
    w.files = held.size();
    return w;
}

struct Window {
    std::vector<ViewPiece> pieces;
    FileLease lease;
    size_t next = 0;
};

// The next window from planned piece `from`, with a lease on its files.
Window leased_window(const ReadPlan& plan, size_t from, size_t max_files) {
    for (;;) {
        Realized r = realize_from(plan, from, max_files);
        if (FileBudget::shared().try_take(r.files)) return Window{std::move(r.pieces), FileLease(r.files), r.next};
        r.pieces.clear();  // the descriptors go back before waiting
        FileBudget::shared().wait_for(r.files);
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

void for_each_window(const ReadPlan& plan, const std::function<void(std::vector<ViewPiece>&&)>& consume) {
    const size_t max_files = files_per_window();
    for (size_t at = 0; at < plan.pieces.size();) {
        Window w = leased_window(plan, at, max_files);
        at = w.next;
        consume(std::move(w.pieces));
    }
}

std::optional<LeasedPieces> pieces_within(const ReadPlan& plan) {
    const size_t max_files = files_per_window();
    size_t opening = 0;  // runs that open a file each (partitions): too many, and none is opened here
    for (const auto& p : plan.pieces) opening += p.run && p.run->source->extents_open_files();
    if (opening > max_files) return std::nullopt;
    Realized all = realize_from(plan, 0, max_files);
    if (all.next < plan.pieces.size()) return std::nullopt;
    if (!FileBudget::shared().try_take(all.files)) return std::nullopt;  // busy: the windowed way waits its turn
    return LeasedPieces{std::move(all.pieces), FileLease(all.files)};
}

}  // namespace ncafs::fs
