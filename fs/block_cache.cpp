#include "fs/block_cache.hpp"

#include <algorithm>
#include <cstring>
#include <future>

#include "codecs/error.hpp"
#include "fs/read_path.hpp"

namespace ncafs::fs {

BlockCache::Span BlockCache::block(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until) {
    Pending pending;
    {
        std::lock_guard lock(mutex_);
        if (auto hit = blocks_.get(BlockKey{vf, index})) return Span{*hit, index * kComputedBlockSize};
        if (auto it = computing_.find(BlockKey{vf, index}); it != computing_.end()) pending = it->second;
    }
    if (pending.bytes.valid()) return Span{pending.bytes.get(), pending.run_start};  // rethrows the first reader's error
    return compute(vf, index, until);
}

BlockCache::Span BlockCache::compute(const std::shared_ptr<const VirtualFile>& vf, uint64_t index, uint64_t until) {
    std::promise<Bytes> promise;
    uint64_t generation, ticket, end = index;  // the run: blocks [index, end)
    const uint64_t start = index * kComputedBlockSize;
    {
        std::lock_guard lock(mutex_);
        generation = generation_;
        ticket = ++next_ticket_;
        auto future = promise.get_future().share();
        // The run stops before a block that is cached or being computed.
        do {
            computing_[BlockKey{vf, end}] = Pending{ticket, start, future};
            ++end;
        } while (end * kComputedBlockSize < std::min(until, vf->size()) && !blocks_.contains(BlockKey{vf, end}) &&
                 !computing_.count(BlockKey{vf, end}));
    }
    auto done = [&] {  // under the lock
        for (uint64_t i = index; i < end; ++i)
            if (auto it = computing_.find(BlockKey{vf, i}); it != computing_.end() && it->second.ticket == ticket)
                computing_.erase(it);
    };
    Bytes run;
    try {
        auto bytes = std::make_shared<std::vector<uint8_t>>(
            static_cast<size_t>(std::min(end * kComputedBlockSize, vf->size()) - start));
        read_view(*vf, start, *bytes);  // outside the lock: other readers go on
        run = std::move(bytes);
    } catch (...) {
        promise.set_exception(std::current_exception());
        std::lock_guard lock(mutex_);
        done();
        throw;
    }
    promise.set_value(run);
    std::vector<std::pair<BlockKey, Bytes>> blocks;  // copied out before taking the lock
    if (end - index == 1) blocks.emplace_back(BlockKey{vf, index}, run);
    for (uint64_t i = index; end - index > 1 && i < end; ++i) {
        auto from = run->begin() + static_cast<ptrdiff_t>((i - index) * kComputedBlockSize);
        auto to = run->begin() + static_cast<ptrdiff_t>(std::min<uint64_t>((i + 1 - index) * kComputedBlockSize, run->size()));
        blocks.emplace_back(BlockKey{vf, i}, std::make_shared<const std::vector<uint8_t>>(from, to));
    }
    std::lock_guard lock(mutex_);
    done();
    if (generation == generation_)
        for (auto& [key, bytes] : blocks) blocks_.put(key, std::move(bytes));
    return Span{run, start};
}

void BlockCache::clear() {
    std::lock_guard lock(mutex_);
    blocks_.clear();
    computing_.clear();
    ++generation_;
}

void BlockCache::forget(const VirtualFile* vf) {
    std::lock_guard lock(mutex_);
    blocks_.erase_if([&](const BlockKey& k, const auto&) { return k.file.get() == vf; });
    std::erase_if(computing_, [&](const auto& entry) { return entry.first.file.get() == vf; });
}

void BlockCache::read(const std::shared_ptr<const VirtualFile>& vf, uint64_t offset, std::span<uint8_t> out,
                      uint64_t readahead) {
    if (offset > vf->size() || out.size() > vf->size() - offset)
        throw UsageError("cached read outside the virtual file");
    const uint64_t until = offset + out.size() + std::min(readahead, vf->size() - offset - out.size());
    size_t done = 0;
    while (done < out.size()) {
        uint64_t position = offset + done;
        Span span = block(vf, position / kComputedBlockSize, until);
        size_t within = static_cast<size_t>(position - span.start);
        size_t n = std::min(out.size() - done, span.bytes->size() - within);
        std::memcpy(out.data() + done, span.bytes->data() + within, n);
        done += n;
    }
}

}  // namespace ncafs::fs
