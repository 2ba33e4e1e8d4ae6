#include "fs/view_block_cache.hpp"

#include <algorithm>
#include <cstring>
#include <future>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "fs/view_read.hpp"
#include "io/worker_pool.hpp"

namespace ncafs::fs {

ViewBlockCache::Span ViewBlockCache::block(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until,
                                   const ReadContext& ctx) {
    Pending pending;
    {
        MutexLock lock(mutex_);
        if (auto hit = blocks_.get(BlockKey{vf, index})) return Span{*hit, index * kComputedBlockSize};
        if (auto it = computing_.find(BlockKey{vf, index}); it != computing_.end()) pending = it->second;
    }
    if (pending.bytes.valid()) return Span{pending.bytes.get(), pending.run_start};  // rethrows the first reader's error
    Run run;
    {
        MutexLock lock(mutex_);
        run = claim_locked(vf, index, until);
    }
    return fill(run, ctx);
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

ViewBlockCache::Span ViewBlockCache::fill(Run& r, const ReadContext& ctx) {
    const VirtualFile& vf = *r.vf;
    const uint64_t start = r.index * kComputedBlockSize;
    Bytes run;
    try {
        auto bytes = std::make_shared<std::vector<uint8_t>>(
            static_cast<size_t>(std::min(r.end * kComputedBlockSize, vf.size()) - start));
        read_view(vf, start, *bytes, ctx);  // outside the lock: other readers go on
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
            fill(*run, ahead);
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
                      uint64_t readahead, const ReadContext& ctx) {
    if (offset > vf->size() || out.size() > vf->size() - offset)
        throw UsageError("cached read outside the virtual file");
    const uint64_t end = offset + out.size();
    ReadContext here = ctx;
    here.forward_reader = ctx.forward_reader || readahead > 0;  // its next bytes are computed ahead below
    size_t done = 0;
    while (done < out.size()) {
        uint64_t position = offset + done;
        Span span = block(vf, position / kComputedBlockSize, end, here);
        size_t within = static_cast<size_t>(position - span.start);
        size_t n = std::min(out.size() - done, span.bytes->size() - within);
        std::memcpy(out.data() + done, span.bytes->data() + within, n);
        done += n;
    }
    if (readahead > 0 && end < vf->size()) compute_ahead(vf, end, end + readahead, ctx);
}

}  // namespace ncafs::fs
