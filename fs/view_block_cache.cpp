#include "fs/view_block_cache.hpp"

#include <algorithm>
#include <cstring>
#include <future>
#include <optional>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "fs/view_read.hpp"
#include "io/worker_pool.hpp"

namespace ncafs::fs {

std::optional<ViewBlockCache::Span> ViewBlockCache::cached_or_claim(const std::shared_ptr<const VirtualFile>& vf,
                                                                    uint64_t index, uint64_t until,
                                                                    std::optional<Run>& run) {
    Pending pending;
    {
        MutexLock lock(mutex_);
        if (auto hit = blocks_.get(BlockKey{vf, index})) return Span{*hit, index * kComputedBlockSize};
        if (auto it = computing_.find(BlockKey{vf, index}); it != computing_.end()) pending = it->second;
        else run.emplace(claim_locked(vf, index, until));
    }
    if (pending.bytes.valid()) return Span{pending.bytes.get(), pending.run_start};  // rethrows the first reader's error
    return std::nullopt;
}

ViewBlockCache::Run ViewBlockCache::claim_locked(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until) {
    Run run{vf, index, index, generation_, ++next_ticket_, {}};
    auto future = run.promise.get_future().share();
    const uint64_t start = index * kComputedBlockSize;
    // The run stops before a block that is cached or being computed.
    do {
        computing_[BlockKey{vf, run.end}] = Pending{run.ticket, start, future};
        ++run.end;
    } while (run.end * kComputedBlockSize < std::min(until, vf->size()) && !blocks_.contains(BlockKey{vf, run.end}) &&
             !computing_.count(BlockKey{vf, run.end}));
    return run;
}

void ViewBlockCache::unclaim_locked(const Run& run) {
    for (uint64_t i = run.index; i < run.end; ++i)
        if (auto it = computing_.find(BlockKey{run.vf, i}); it != computing_.end() && it->second.ticket == run.ticket)
            computing_.erase(it);
}

ViewBlockCache::Span ViewBlockCache::fill(Run& r, const ReadContext& ctx, Known computed) {
    const VirtualFile& vf = *r.vf;
    const uint64_t start = r.index * kComputedBlockSize, end = std::min(r.end * kComputedBlockSize, vf.size());
    Bytes run;
    try {  // outside the lock: other readers go on
        auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(end - start));
        // The reader's own bytes were realized by it and hold no extent:
        // computed as they are; the rest of the run (at most a block either
        // side, or all of a run ahead) is planned and realized here.
        const uint64_t from = std::clamp(computed.begin, start, end), to = std::clamp(computed.end, from, end);
        auto part = [&](uint64_t a, uint64_t b) { return std::span<uint8_t>(*bytes).subspan(a - start, b - a); };
        if (from > start) read_view(vf, plan_read(vf, start, from - start), part(start, from), ctx);
        if (to > from) {
            ContextOnThread here(ctx);
            try {
                vf.read(from, part(from, to));
            } catch (const SourceError&) {
                vf.read(from, part(from, to));  // as read_view: a partition that changed is read again
            }
        }
        if (end > to) read_view(vf, plan_read(vf, to, end - to), part(to, end), ctx);
        run = std::move(bytes);
    } catch (...) {
        r.promise.set_exception(std::current_exception());
        MutexLock lock(mutex_);
        unclaim_locked(r);
        throw;
    }
    r.promise.set_value(run);
    std::vector<std::pair<BlockKey, Bytes>> blocks;  // copied out before taking the lock
    if (r.end - r.index == 1) blocks.emplace_back(BlockKey{r.vf, r.index}, run);
    for (uint64_t i = r.index; r.end - r.index > 1 && i < r.end; ++i) {
        auto from = run->begin() + static_cast<ptrdiff_t>((i - r.index) * kComputedBlockSize);
        auto to = run->begin() + static_cast<ptrdiff_t>(std::min<uint64_t>((i + 1 - r.index) * kComputedBlockSize, run->size()));
        blocks.emplace_back(BlockKey{r.vf, i}, std::make_shared<const std::vector<uint8_t>>(from, to));
    }
    MutexLock lock(mutex_);
    unclaim_locked(r);
    if (r.generation == generation_)
        for (auto& [key, bytes] : blocks) blocks_.put(key, std::move(bytes));
    return Span{run, start};
}

void ViewBlockCache::compute_ahead(const std::shared_ptr<const VirtualFile>& vf, uint64_t from, uint64_t until,
                               const ReadContext& ctx) {
    until = std::min(until, vf->size());
    auto run = std::make_shared<Run>();
    {
        MutexLock lock(mutex_);
        if (ahead_jobs_ >= kAheadJobs) return;  // the cores are busy computing ahead already
        uint64_t index = from / kComputedBlockSize;
        while (index * kComputedBlockSize < until &&
               (blocks_.contains(BlockKey{vf, index}) || computing_.count(BlockKey{vf, index})))
            ++index;
        // Runs of at least half the readahead, not one per request.
        if (index * kComputedBlockSize >= from + (until - from) / 2) return;
        *run = claim_locked(vf, index, until);
        ++ahead_jobs_;
    }
    auto ended = [this] {
        MutexLock lock(mutex_);
        if (--ahead_jobs_ == 0) ahead_ended_.notify_all();
    };
    ReadContext ahead = ctx;
    ahead.forward_reader = true;  // this is the decoding ahead: the sources need not
    auto job = [this, run, ended, ahead] {
        try {
            fill(*run, ahead, Known{});  // bytes no reader realized yet
        } catch (...) {
            // Its readers fall back to reading the bytes they asked for (reply_copied).
        }
        ended();
    };
    auto dropped = [this, run, ended] {  // the pool stopped: its readers compute for themselves
        run->promise.set_exception(std::make_exception_ptr(UsageError("a run computed ahead was dropped")));
        {
            MutexLock lock(mutex_);
            unclaim_locked(*run);
        }
        ended();
    };
    if (!WorkerPool::shared().post(job, dropped)) job();  // no thread to spare: the caller computes it
}

void ViewBlockCache::wait_for_ahead() {
    MutexLock lock(mutex_);
    while (ahead_jobs_ != 0) lock.wait(ahead_ended_);
}

ViewBlockCache::~ViewBlockCache() { wait_for_ahead(); }

void ViewBlockCache::clear() {
    MutexLock lock(mutex_);
    blocks_.clear();
    computing_.clear();
    ++generation_;
}

void ViewBlockCache::forget(const VirtualFile* vf) {
    MutexLock lock(mutex_);
    blocks_.erase_if([&](const BlockKey& k, const auto&) { return k.file.get() == vf; });
    std::erase_if(computing_, [&](const auto& entry) { return entry.first.file.get() == vf; });
    ++generation_;  // a run of vf still being computed (ahead, or by a slow reader) computed the old bytes
}

void ViewBlockCache::read(const std::shared_ptr<const VirtualFile>& vf, uint64_t offset, std::span<uint8_t> out,
                          uint64_t readahead, const ReadContext& ctx, bool realized_computed) {
    if (offset > vf->size() || out.size() > vf->size() - offset)
        throw UsageError("cached read outside the virtual file");
    const uint64_t end = offset + out.size();
    ReadContext here = ctx;
    here.forward_reader = ctx.forward_reader || readahead > 0;  // its next bytes are computed ahead below
    size_t done = 0;
    while (done < out.size()) {
        uint64_t position = offset + done;
        std::optional<Run> run;  // made on a miss only: its promise allocates
        std::optional<Span> span = cached_or_claim(vf, position / kComputedBlockSize, end, run);
        if (!span) span = fill(*run, here, realized_computed ? Known{offset, end} : Known{});  // a miss
        size_t within = static_cast<size_t>(position - span->start);
        size_t n = std::min(out.size() - done, span->bytes->size() - within);
        std::memcpy(out.data() + done, span->bytes->data() + within, n);
        done += n;
    }
    if (readahead > 0 && end < vf->size()) compute_ahead(vf, end, end + readahead, ctx);
}

}  // namespace ncafs::fs
