#include "fs/block_cache.hpp"

#include <cstring>
#include <future>

#include "codecs/error.hpp"
#include "fs/read_path.hpp"

namespace ncafs::fs {

BlockCache::Bytes BlockCache::block(const std::shared_ptr<const VirtualFile>& vf, uint64_t index) {
    std::shared_future<Bytes> pending;
    {
        std::lock_guard lock(mutex_);
        if (auto hit = blocks_.get(BlockKey{vf, index})) return *hit;
        if (auto it = computing_.find(BlockKey{vf, index}); it != computing_.end()) pending = it->second.bytes;
    }
    if (pending.valid()) return pending.get();  // rethrows the first reader's error
    return compute(vf, index);
}

BlockCache::Bytes BlockCache::compute(const std::shared_ptr<const VirtualFile>& vf, uint64_t index) {
    const BlockKey key{vf, index};
    std::promise<Bytes> promise;
    uint64_t generation, ticket;
    {
        std::lock_guard lock(mutex_);
        generation = generation_;
        ticket = ++next_ticket_;
        computing_[key] = Pending{ticket, promise.get_future().share()};
    }
    auto done = [&] {  // under the lock
        if (auto it = computing_.find(key); it != computing_.end() && it->second.ticket == ticket) computing_.erase(it);
    };
    Bytes result;
    try {
        uint64_t start = index * kBlockSize;
        auto bytes = std::make_shared<std::vector<uint8_t>>(
            static_cast<size_t>(std::min<uint64_t>(kBlockSize, vf->size() - start)));
        read_view(*vf, start, *bytes);  // outside the lock: other readers go on
        result = std::move(bytes);
    } catch (...) {
        promise.set_exception(std::current_exception());
        std::lock_guard lock(mutex_);
        done();
        throw;
    }
    promise.set_value(result);
    std::lock_guard lock(mutex_);
    done();
    if (generation == generation_) blocks_.put(key, result);
    return result;
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

void BlockCache::read(const std::shared_ptr<const VirtualFile>& vf, uint64_t offset, std::span<uint8_t> out) {
    if (offset > vf->size() || out.size() > vf->size() - offset)
        throw UsageError("cached read outside the virtual file");
    size_t done = 0;
    while (done < out.size()) {
        uint64_t position = offset + done;
        auto bytes = block(vf, position / kBlockSize);
        size_t within = static_cast<size_t>(position % kBlockSize);
        size_t n = std::min(out.size() - done, bytes->size() - within);
        std::memcpy(out.data() + done, bytes->data() + within, n);
        done += n;
    }
}

}  // namespace ncafs::fs
