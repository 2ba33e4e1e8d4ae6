#include "codecs/ncstream/inflate_index.hpp"

#include <zlib.h>

#include <algorithm>

namespace ncafs::ncstream {

namespace {
constexpr size_t kInputChunk = 1 << 16;
}

struct InflateIndex::Snapshot {
    z_stream z{};
    bool live = false;
    uint64_t in_pos = 0;  // compressed bytes consumed up to this point
    ~Snapshot() {
        if (live) inflateEnd(&z);
    }
};

std::optional<uint64_t> InflateIndex::block_size_for(uint64_t raw_size, uint64_t max_block) {
    // Blocks below kMinBlock need not fit max_block (a tiny cache only costs speed).
    const uint64_t block = std::max(kMinBlock, raw_size / kMaxBlocks + 1);
    if (block > std::max(max_block, kMinBlock)) return std::nullopt;
    return block;
}

InflateIndex::InflateIndex(uint64_t compressed_size, uint64_t raw_size, uint64_t block_size)
    : compressed_(compressed_size), raw_(raw_size), block_(block_size) {
    snapshots_.resize(static_cast<size_t>(block_count()) + 1);
}

InflateIndex::~InflateIndex() = default;

std::optional<std::string> InflateIndex::inflate_block(uint64_t b, std::span<uint8_t> out, const Fetch& fetch) {
    MutexLock lock(mutex_);
    if (b >= block_count() || out.size() != block_bytes(b)) return std::string("inflate block out of range");
    if (!snapshots_[0]) {
        auto first = std::make_unique<Snapshot>();
        if (inflateInit(&first->z) != Z_OK) return std::string("zlib: inflateInit failed");
        first->live = true;
        snapshots_[0] = std::move(first);
    }
    uint64_t from = b;
    while (!snapshots_[from]) --from;
    // Work on a copy: the stored snapshot stays the state at its block start.
    Snapshot work;
    if (inflateCopy(&work.z, &snapshots_[from]->z) != Z_OK) return std::string("zlib: inflateCopy failed");
    work.live = true;
    work.in_pos = snapshots_[from]->in_pos;
    std::vector<uint8_t> scratch;
    for (uint64_t k = from; k <= b; ++k) {
        uint8_t* dst = out.data();
        if (k != b) {
            scratch.resize(block_bytes(k));
            dst = scratch.data();
        }
        if (auto err = run_block(work, k, dst, fetch)) return err;
        if (k + 1 < snapshots_.size() && !snapshots_[k + 1]) {
            auto s = std::make_unique<Snapshot>();
            if (inflateCopy(&s->z, &work.z) != Z_OK) return std::string("zlib: inflateCopy failed");
            s->live = true;
            s->in_pos = work.in_pos;
            snapshots_[k + 1] = std::move(s);
        }
    }
    return std::nullopt;
}

// Produces exactly block_bytes(b) bytes; the last block must end the stream
// (one spare output byte notices a stream that inflates to more).
std::optional<std::string> InflateIndex::run_block(Snapshot& s, uint64_t b, uint8_t* out, const Fetch& fetch) {
    const bool last = b + 1 == block_count();
    const uint64_t want = block_bytes(b);
    uint8_t spare = 0;
    uint64_t produced = 0;
    std::vector<uint8_t> in(kInputChunk);
    z_stream& z = s.z;
    z.avail_in = 0;
    while (true) {
        if (z.avail_in == 0 && s.in_pos < compressed_) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), compressed_ - s.in_pos));
            fetch(s.in_pos, std::span<uint8_t>(in.data(), n));
            z.next_in = in.data();
            z.avail_in = static_cast<uInt>(n);
        }
        const uint64_t before_in = z.avail_in;
        const bool to_spare = produced == want;
        z.next_out = to_spare ? &spare : out + produced;
        z.avail_out = to_spare ? 1 : static_cast<uInt>(std::min<uint64_t>(want - produced, UINT32_MAX));
        const uint64_t room = z.avail_out;
        const int rc = inflate(&z, Z_NO_FLUSH);
        s.in_pos += before_in - z.avail_in;
        if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
            return std::string("corrupt zlib stream: ") + (z.msg ? z.msg : "inflate error");
        const uint64_t got = room - z.avail_out;
        if (to_spare && got) return "zlib stream inflates to more than the " + std::to_string(raw_) + " bytes announced";
        produced += to_spare ? 0 : got;
        if (rc == Z_STREAM_END) {
            if (produced != want || !last)
                return "zlib stream ends after " + std::to_string(b * block_ + produced) + " of the " +
                       std::to_string(raw_) + " bytes announced";
            if (s.in_pos != compressed_) return std::string("bytes after the end of the zlib stream");
            return std::nullopt;
        }
        if (produced == want && !last) return std::nullopt;
        if (got == 0 && z.avail_in == 0 && s.in_pos == compressed_)
            return std::string("deflated payload ends before its zlib stream does");
        if (rc == Z_BUF_ERROR && got == 0 && z.avail_in != 0) return std::string("zlib stream makes no progress");
    }
}

}  // namespace ncafs::ncstream
