#include "fs/piece_windows.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/read/dataset_cache.hpp"
#include "codecs/realize_pieces.hpp"
#include "io/mutex.hpp"
#include "io/worker_pool.hpp"
#include "fs/backend.hpp"

namespace ncafs::fs {

namespace {

size_t open_files_bound() { return shared_dataset_cache().capacity(); }

FileBudget& budget_of(const ReadContext& ctx) { return ctx.budget ? *ctx.budget : FileBudget::shared(); }

// Distinct local files in pieces, added to held (sorted, unique).
void add_local_files(const std::vector<ViewPiece>& pieces, std::vector<const OpenFile*>& held) {
    for (const auto& p : pieces)
        if (p.extent && p.extent->file && !p.extent->file->is_remote()) held.push_back(p.extent->file.get());
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
}

// The aggregation a run draws on (its big_endian_extents opens a partition
// per call): realized side by side; null for other sources.
const agg::AggregatedSource* partitions_of(const ViewPiece& p) {
    return p.run ? dynamic_cast<const agg::AggregatedSource*>(p.run->source) : nullptr;
}

// Planned pieces [from, to) as read, each piece's realization apart; runs
// of partitions are realized side by side on the pool (ctx.parallel_opens at
// once) when two or more of them open a file.
std::vector<std::vector<ViewPiece>> realize_each(const ReadPlan& plan, size_t from, size_t to, const ReadContext& ctx) {
    std::vector<std::vector<ViewPiece>> realized(to - from);
    // Helpers only where two or more pieces open a partition: waking one
    // for pieces whose partitions are open cost more than it saved (a cold
    // read of a netCDF-4-backed view: thread switches were a fifth of the
    // daemon's time).
    bool partitions = false;
    size_t opens = 0;
    for (size_t i = from; i < to && opens < 2; ++i) {
        const agg::AggregatedSource* source = partitions_of(plan.pieces[i]);
        if (!source) continue;
        partitions = true;
        if (source->extents_would_open(plan.pieces[i].run->first)) ++opens;
    }
    // This read's runs, known together: no aggregation watches them for a series to open ahead.
    const bool many = partitions && realized.size() > 1;
    const auto series = many ? agg::AggregatedSource::SeriesWatch::Off : agg::AggregatedSource::SeriesWatch::On;
    auto one = [&](size_t k) {
        const ViewPiece& p = plan.pieces[from + k];
        if (const agg::AggregatedSource* source = partitions_of(p))
            append_run(realized[k], p, source->big_endian_extents(p.run->first, p.run->count, series));
        else
            append_realized(realized[k], p);
    };
    if (!many || opens < 2 || ctx.parallel_opens < 2) {
        for (size_t k = 0; k < realized.size(); ++k) one(k);
        return realized;
    }
    WorkerPool::shared().parallel_for(realized.size(), ctx.parallel_opens, [&](size_t k, size_t) {
        ContextOnThread here(ctx);  // the caller's, on every thread
        one(k);
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
Realized realize_from(const ReadPlan& plan, size_t from, size_t max_files, const ReadContext& ctx) {
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
        auto realized = realize_each(plan, w.next, to, ctx);
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
Window leased_window(const ReadPlan& plan, size_t from, size_t max_files, const ReadContext& ctx) {
    FileBudget& budget = budget_of(ctx);
    for (;;) {
        Realized r = realize_from(plan, from, max_files, ctx);
        if (budget.try_take(r.files)) return Window{std::move(r.pieces), FileLease(budget, r.files), r.next};
        r.pieces.clear();  // the descriptors go back before waiting
        budget.wait_for(r.files);
    }
}

}  // namespace

FileBudget& FileBudget::shared() {
    static FileBudget budget;
    return budget;
}

bool FileBudget::try_take(size_t files) {
    MutexLock lock(mutex_);
    if (held_ > 0 && held_ + files > limit()) return false;
    held_ += files;
    return true;
}

void FileBudget::wait_for(size_t files) {
    MutexLock lock(mutex_);
    while (held_ != 0 && held_ + files > limit()) lock.wait(released_);
}

void FileBudget::give_back(size_t files) {
    {
        MutexLock lock(mutex_);
        held_ -= files;
    }
    released_.notify_all();
}

size_t FileBudget::limit() { return std::max(files_per_window(), open_files_bound() / 2); }

FileLease& FileLease::operator=(FileLease&& other) noexcept {
    if (this != &other) {
        if (files_) budget_->give_back(files_);
        budget_ = other.budget_;
        files_ = other.files_;
        other.files_ = 0;
    }
    return *this;
}

FileLease::~FileLease() {
    if (files_) budget_->give_back(files_);
}

size_t files_per_window() { return std::max<size_t>(4, open_files_bound() / 4); }

void for_each_window(const ReadPlan& plan, const ReadContext& ctx,
                     const std::function<void(std::vector<ViewPiece>&&)>& consume) {
    const size_t max_files = files_per_window();
    for (size_t at = 0; at < plan.pieces.size();) {
        Window w = leased_window(plan, at, max_files, ctx);
        at = w.next;
        consume(std::move(w.pieces));
    }
}

std::optional<LeasedPieces> pieces_within(const ReadPlan& plan, const ReadContext& ctx) {
    const size_t max_files = files_per_window();
    size_t opening = 0;  // runs that open a file each (partitions): too many, and none is opened here
    for (const auto& p : plan.pieces) opening += partitions_of(p) != nullptr;
    if (opening > max_files) return std::nullopt;
    Realized all = realize_from(plan, 0, max_files, ctx);
    if (all.next < plan.pieces.size()) return std::nullopt;
    FileBudget& budget = budget_of(ctx);
    if (!budget.try_take(all.files)) return std::nullopt;  // busy: the windowed way waits its turn
    return LeasedPieces{std::move(all.pieces), FileLease(budget, all.files)};
}

}  // namespace ncafs::fs
