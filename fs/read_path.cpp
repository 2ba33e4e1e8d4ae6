#include "fs/read_path.hpp"

#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::fs {

std::vector<ViewPiece> merged_pieces(const VirtualFile& vf, uint64_t offset, uint64_t length) {
    auto pieces = vf.pieces(offset, length);
    std::vector<ViewPiece> merged;
    merged.reserve(pieces.size());
    for (auto& p : pieces) {
        if (p.length == 0) continue;
        if (!merged.empty()) {
            auto& last = merged.back();
            bool both_extents = last.extent && p.extent && last.extent->file == p.extent->file;
            if (both_extents && last.extent->offset + last.extent->length == p.extent->offset &&
                last.offset + last.length == p.offset) {
                last.length += p.length;
                last.extent->length += p.extent->length;
                continue;
            }
        }
        merged.push_back(std::move(p));
    }
    return merged;
}

void read_view(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out) {
    if (out.empty()) return;
    if (offset > vf.size() || out.size() > vf.size() - offset)
        throw UsageError("read of " + std::to_string(out.size()) + " bytes at " + std::to_string(offset) +
                         " is outside the virtual file of " + std::to_string(vf.size()) + " bytes");
    uint64_t covered = 0;
    for (const auto& p : merged_pieces(vf, offset, out.size())) {
        if (p.offset != offset + covered || p.length > out.size() - covered)
            throw UsageError("VirtualFile::pieces returned a piece at " + std::to_string(p.offset) +
                             " that does not continue the range at " + std::to_string(offset + covered));
        auto dest = out.subspan(covered, p.length);
        if (p.extent) {
            if (p.extent->length != p.length || !p.extent->file)
                throw UsageError("VirtualFile::pieces returned an extent whose length differs from its piece");
            p.extent->file->pread_exact(dest.data(), dest.size(), p.extent->offset);
        } else {
            vf.read(p.offset, dest);
        }
        covered += p.length;
    }
    if (covered != out.size())
        throw UsageError("VirtualFile::pieces covered " + std::to_string(covered) + " of " +
                         std::to_string(out.size()) + " bytes");
}

}  // namespace ncafs::fs

namespace ncafs::fs {

std::shared_ptr<const std::vector<uint8_t>> BlockCache::block(const std::shared_ptr<const VirtualFile>& vf,
                                                              uint64_t index) {
    uint64_t generation;
    const BlockKey key{vf, index};
    std::promise<Block> computed;
    {
        std::unique_lock lock(mutex_);
        generation = generation_;
        if (auto hit = blocks_.get(key)) return *hit;
        // Readahead asks for several pieces of one block at once: the first
        // computes it, the others wait for it rather than compute it again.
        if (auto running = computing_.find(key); running != computing_.end()) {
            auto pending = running->second;
            lock.unlock();
            return pending.get();
        }
        computing_.emplace(key, computed.get_future().share());
    }
    uint64_t start = index * kBlockSize;
    auto bytes = std::make_shared<std::vector<uint8_t>>(
        static_cast<size_t>(std::min<uint64_t>(kBlockSize, vf->size() - start)));
    try {
        read_view(*vf, start, *bytes);  // outside the lock: other readers go on
    } catch (...) {
        std::lock_guard lock(mutex_);
        computing_.erase(key);
        computed.set_exception(std::current_exception());
        throw;
    }
    std::lock_guard lock(mutex_);
    computing_.erase(key);
    computed.set_value(bytes);
    if (generation == generation_) blocks_.put(key, bytes);
    return bytes;
}

void BlockCache::clear() {
    std::lock_guard lock(mutex_);
    blocks_.clear();
    ++generation_;
}

void BlockCache::forget(const VirtualFile* vf) {
    std::lock_guard lock(mutex_);
    blocks_.erase_if([&](const BlockKey& k, const auto&) { return k.file.get() == vf; });
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
