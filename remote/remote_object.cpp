#include "remote/remote_object.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "io/error.hpp"
#include "remote/network_scope.hpp"

namespace ncafs::remote {

namespace {
constexpr size_t kBlocksPerBatch = 64;  // bounds the memory one read holds at once
}

std::string version_of(const ObjectMeta& meta) {
    return "etag=" + meta.etag + ";modified=" + meta.last_modified + ";size=" + std::to_string(meta.size);
}

std::string if_match_value(const std::string& etag) { return etag.rfind("W/", 0) == 0 ? std::string() : etag; }

RemoteObject::RemoteObject(std::shared_ptr<StoreCore> core, ObjectMeta meta, ObjectAddress address)
    : core_(std::move(core)), meta_(std::move(meta)), address_(std::move(address)) {
    version_ = version_of(meta_);
    key_ = object_key(meta_.url, version_);
}

uint64_t RemoteObject::block_length(uint64_t index) const {
    return std::min(kFetchBlockSize, meta_.size - index * kFetchBlockSize);
}

void RemoteObject::check_inside(uint64_t n, uint64_t offset) const {
    if (offset > meta_.size || n > meta_.size - offset)
        throw SourceError(meta_.url, "read of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                                         " beyond the end (size " + std::to_string(meta_.size) + ")");
}

void RemoteObject::fetch(char* buffer, uint64_t n, uint64_t offset) const {
    check_inside(n, offset);
    if (n == 0) return;
    fetch_checked({{&address_, offset, n, if_match_value(meta_.etag), buffer}});
}

void RemoteObject::fetch_checked(const std::vector<RangeRequest>& requests) const {
    if (std::optional<FetchError> recent = core_->failures.recall(meta_.url, version_)) throw *recent;
    try {
        fetch_ranges(core_->fetch_context(), meta_.url, Expected{meta_.size, meta_.etag}, requests);
    } catch (const FetchError& e) {
        core_->failed(meta_.url, version_, e);
        throw;
    }
}

void RemoteObject::keep_block(uint64_t index, Block block) const {
    if (core_->disk) core_->disk->store_block(key_, index, *block);
    core_->memory.put(BlockKey{key_, index}, std::move(block));
}

void RemoteObject::read(void* buffer, size_t n, uint64_t offset) const {
    check_inside(n, offset);
    if (n == 0) return;
    std::vector<uint64_t> wanted = readahead_after(n, offset);
    Range range{buffer, n, offset};
    serve(std::span<const Range>(&range, 1), std::move(wanted));
}

void RemoteObject::read_many(std::span<const Range> ranges) const {
    for (const Range& r : ranges) check_inside(r.n, r.offset);
    serve(ranges, {});
}

// Sequential readers (this read starts where the last one ended) get the
// following blocks too, twice as many each time, up to the maximum.
std::vector<uint64_t> RemoteObject::readahead_after(uint64_t n, uint64_t offset) const {
    if (!network_allowed()) return {};  // a try from the caches: the same read may come with the network next
    MutexLock lock(sequence_mutex_);
    bool sequential = offset == expected_next_ && offset > 0;
    readahead_ = sequential ? std::min(kMaxReadaheadBlocks, std::max(1u, readahead_ * 2)) : 0;
    expected_next_ = offset + n;
    std::vector<uint64_t> extra;
    uint64_t last = (offset + n - 1) / kFetchBlockSize;
    uint64_t blocks = (meta_.size + kFetchBlockSize - 1) / kFetchBlockSize;
    // Only when the next block is not held yet: a window that slid one block
    // at a time would cost one GET per block.
    if (last + 1 < blocks && readahead_ > 0 && core_->memory.get(BlockKey{key_, last + 1})) return extra;
    for (uint64_t i = last + 1; i <= last + readahead_ && i < blocks; ++i) extra.push_back(i);
    return extra;
}

void RemoteObject::serve(std::span<const Range> ranges, std::vector<uint64_t> wanted) const {
    std::set<uint64_t> indices(wanted.begin(), wanted.end());
    for (const Range& r : ranges)
        if (r.n > 0)
            for (uint64_t i = r.offset / kFetchBlockSize; i <= (r.offset + r.n - 1) / kFetchBlockSize; ++i) indices.insert(i);
    std::vector<uint64_t> all(indices.begin(), indices.end());
    for (size_t start = 0; start < all.size(); start += kBlocksPerBatch) {
        std::vector<uint64_t> batch(all.begin() + start, all.begin() + std::min(all.size(), start + kBlocksPerBatch));
        Blocks blocks = load_blocks(batch);
        for (const Range& r : ranges) {
            for (const auto& [index, block] : blocks) {
                uint64_t b0 = index * kFetchBlockSize, b1 = b0 + block->size();
                uint64_t from = std::max(b0, r.offset), to = std::min(b1, r.offset + r.n);
                if (from < to)
                    std::memcpy(static_cast<char*>(r.buffer) + (from - r.offset), block->data() + (from - b0), to - from);
            }
        }
    }
}

RemoteObject::Blocks RemoteObject::load_blocks(const std::vector<uint64_t>& indices) const {
    Blocks blocks;
    std::vector<uint64_t> missing;
    for (uint64_t i : indices) {
        Block b = core_->memory.get(BlockKey{key_, i});
        if (!b && core_->disk) {
            b = core_->disk->load_block(key_, i, block_length(i));
            if (b) core_->memory.put(BlockKey{key_, i}, b);
        }
        if (b) blocks.emplace(i, std::move(b));
        else missing.push_back(i);
    }
    if (!missing.empty()) fetch_blocks(missing, blocks);
    return blocks;
}

// Consecutive missing blocks become one range GET (up to
// kMaxBlocksPerRequest); the GETs run in parallel.
void RemoteObject::fetch_blocks(const std::vector<uint64_t>& missing, Blocks& into) const {
    struct Run {
        uint64_t first, count;
        std::vector<char> bytes;
    };
    std::vector<Run> runs;
    for (uint64_t i : missing) {
        if (!runs.empty() && runs.back().first + runs.back().count == i && runs.back().count < kMaxBlocksPerRequest)
            ++runs.back().count;
        else
            runs.push_back({i, 1, {}});
    }
    std::vector<RangeRequest> requests;
    std::string if_match = if_match_value(meta_.etag);
    for (Run& run : runs) {
        uint64_t offset = run.first * kFetchBlockSize;
        uint64_t length = std::min(run.count * kFetchBlockSize, meta_.size - offset);
        run.bytes.resize(length);
        requests.push_back({&address_, offset, length, if_match, run.bytes.data()});
    }
    fetch_checked(requests);
    for (const Run& run : runs) {
        for (uint64_t k = 0; k < run.count; ++k) {
            uint64_t at = k * kFetchBlockSize;
            auto block = std::make_shared<const std::vector<char>>(
                run.bytes.begin() + at, run.bytes.begin() + std::min<uint64_t>(at + kFetchBlockSize, run.bytes.size()));
            keep_block(run.first + k, block);
            into.emplace(run.first + k, std::move(block));
        }
    }
}

}  // namespace ncafs::remote
