#include "codecs/ncstream/piece_source.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "codecs/dataset.hpp"
#include "codecs/error.hpp"
#include "codecs/ncstream/zlib_stream.hpp"

namespace ncafs::ncstream {

namespace {

constexpr size_t kMaxIndexes = 4;  // inflate indexes kept per variable (in-flight readers keep theirs)

// Unconditional byte reversal of each element (the piece's order differs
// from the requested one, whatever the host order is).
void reverse_element_bytes(uint8_t* p, uint64_t n, size_t es) {
    if (es == 1) return;
    for (uint64_t i = 0; i < n; ++i, p += es)
        for (size_t a = 0, b = es - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
}

}  // namespace

std::shared_ptr<const std::vector<uint8_t>> InflateCache::find(uint64_t offset, uint64_t block) {
    MutexLock lock(mutex_);
    return entries_.get({offset, block}).value_or(nullptr);
}

void InflateCache::insert(uint64_t offset, std::shared_ptr<const std::vector<uint8_t>> value, uint64_t block) {
    const std::pair<uint64_t, uint64_t> key{offset, block};
    MutexLock lock(mutex_);
    if (entries_.contains(key) || value->size() > entries_.capacity()) return;
    entries_.put(key, std::move(value));
}

PieceSource::PieceSource(std::shared_ptr<const OpenFile> file, std::string variable, NcType t,
                         std::vector<uint64_t> shape, std::vector<uint8_t> fill_native,
                         std::vector<StoredPiece> pieces, std::shared_ptr<InflateCache> cache)
    : file_(std::move(file)), variable_(std::move(variable)), type_(t), shape_(std::move(shape)),
      fill_native_(std::move(fill_native)), pieces_(std::move(pieces)), cache_(std::move(cache)) {}

std::optional<std::vector<FileExtent>> PieceSource::big_endian_extents(uint64_t first, uint64_t n) const {
    if (pieces_.size() != 1) return std::nullopt;
    const StoredPiece& p = pieces_[0];
    if (p.deflated || p.immediate || !p.big_endian || p.count != shape_) return std::nullopt;
    const uint64_t es = type_size(type_);
    const uint64_t total = ncafs::element_count(shape_);
    if (first > total || n > total - first) return std::nullopt;
    return std::vector<FileExtent>{FileExtent{file_, p.file_offset + first * es, n * es}};
}

std::shared_ptr<const std::vector<uint8_t>> PieceSource::inflated(const StoredPiece& p) const {
    if (auto hit = cache_->find(p.file_offset)) return hit;
    std::vector<uint8_t> compressed(p.stored_length);
    file_->pread_exact(compressed.data(), compressed.size(), p.file_offset);
    auto raw = std::make_shared<std::vector<uint8_t>>(p.raw_length);
    if (auto err = inflate_exact(compressed, raw->data(), p.raw_length))
        throw FormatError(file_->path(), p.file_offset, "variable " + variable_ + ": " + *err);
    cache_->insert(p.file_offset, raw);
    return raw;
}

void PieceSource::copy_piece(const StoredPiece& p, const std::vector<Run>& runs, uint8_t* out) const {
    if (p.immediate) {
        for (const Run& r : runs) std::memcpy(out + r.dst, p.immediate->data() + r.src, r.length);
    } else if (!p.deflated) {
        for (const Run& r : runs) file_->pread_exact(out + r.dst, r.length, p.file_offset + r.src);
    } else if (p.raw_length <= cache_->capacity() / 4) {
        auto raw = inflated(p);
        for (const Run& r : runs) std::memcpy(out + r.dst, raw->data() + r.src, r.length);
    } else {
        copy_indexed(p, runs, out);
    }
}

std::shared_ptr<InflateIndex> PieceSource::index_for(const StoredPiece& p) const {
    MutexLock lock(indexes_mutex_);
    // Each index holds up to 512 inflater snapshots (~40 KiB each): keep a few.
    if (indexes_.size() >= kMaxIndexes && !indexes_.count(p.file_offset)) indexes_.erase(indexes_.begin());
    auto& slot = indexes_[p.file_offset];
    if (!slot) {
        // Blocks must fit the cache, or a sequential read would inflate each block many times.
        auto block = InflateIndex::block_size_for(p.raw_length, cache_->capacity() / 4);
        if (!block)
            throw FormatError(file_->path(), p.file_offset,
                              "variable " + variable_ + ": deflated payload of " + std::to_string(p.raw_length) +
                                  " bytes is above the " + std::to_string(InflateIndex::kMaxBlocks * std::max(cache_->capacity() / 4, InflateIndex::kMinBlock)) +
                                  " bytes this reader seeks in");
        slot = std::make_shared<InflateIndex>(p.stored_length, p.raw_length, *block);
    }
    return slot;
}

std::shared_ptr<const std::vector<uint8_t>> PieceSource::inflated_block(const StoredPiece& p, InflateIndex& index,
                                                                        uint64_t b) const {
    if (auto hit = cache_->find(p.file_offset, b)) return hit;
    auto raw = std::make_shared<std::vector<uint8_t>>(index.block_bytes(b));
    auto err = index.inflate_block(b, *raw, [&](uint64_t off, std::span<uint8_t> buf) {
        file_->pread_exact(buf.data(), buf.size(), p.file_offset + off);
    });
    if (err) throw FormatError(file_->path(), p.file_offset, "variable " + variable_ + ": " + *err);
    cache_->insert(p.file_offset, raw, b);
    return raw;
}

void PieceSource::copy_indexed(const StoredPiece& p, const std::vector<Run>& runs, uint8_t* out) const {
    auto index = index_for(p);
    const uint64_t bs = index->block_size();
    for (const Run& r : runs) {
        for (uint64_t at = r.src; at < r.src + r.length;) {
            const uint64_t b = at / bs;
            auto block = inflated_block(p, *index, b);
            const uint64_t n = std::min(r.src + r.length, (b + 1) * bs) - at;
            std::memcpy(out + r.dst + (at - r.src), block->data() + (at - b * bs), n);
            at += n;
        }
    }
}

void PieceSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                       void* out) const {
    check_box(shape_, start, count, variable_.c_str());
    const size_t rank = shape_.size();
    const size_t es = type_size(type_);
    const uint64_t total = ncafs::element_count(count);
    if (total == 0) return;
    auto* dst = static_cast<uint8_t*>(out);
    const bool want_big = order == ByteOrder::Big || std::endian::native == std::endian::big;

    // Background: the fill value, in the requested order.
    std::vector<uint8_t> fill = fill_native_;
    if (order == ByteOrder::Big) swap_to_big_endian(type_, fill.data(), 1);
    fill_elements(dst, fill.data(), es, total);

    std::vector<uint64_t> lo(rank), hi(rank), idx(rank);
    std::vector<Run> runs;
    for (const StoredPiece& p : pieces_) {
        bool overlap = true;
        for (size_t d = 0; d < rank && overlap; ++d) {
            lo[d] = std::max(start[d], p.start[d]);
            hi[d] = std::min(start[d] + count[d], p.start[d] + p.count[d]);
            overlap = lo[d] < hi[d];
        }
        if (!overlap) continue;
        // Runs: the trailing axes along which the intersection spans both the
        // piece and the request fully are contiguous in both, so merge them.
        runs.clear();
        size_t axis = rank;  // runs cover axes [axis, rank)
        uint64_t run_elems = 1;
        while (axis > 0) {
            --axis;
            const uint64_t ext = hi[axis] - lo[axis];
            run_elems *= ext;
            if (!(ext == p.count[axis] && ext == count[axis])) break;
        }
        if (rank == 0) {
            runs.push_back(Run{0, 0, es});
        } else {
            // Walk the outer indices [lo, hi) of axes [0, axis).
            for (size_t d = 0; d < rank; ++d) idx[d] = lo[d];
            for (bool more = true; more;) {
                uint64_t src = 0, dl = 0;
                for (size_t d = 0; d < rank; ++d) {
                    src = src * p.count[d] + (idx[d] - p.start[d]);
                    dl = dl * count[d] + (idx[d] - start[d]);
                }
                runs.push_back(Run{src * es, dl * es, run_elems * es});
                more = false;  // odometer over axes [0, axis)
                for (size_t d = axis; d-- > 0;) {
                    if (++idx[d] < hi[d]) {
                        more = true;
                        break;
                    }
                    idx[d] = lo[d];
                }
            }
        }
        copy_piece(p, runs, dst);
        if (p.big_endian != want_big)
            for (const Run& r : runs) reverse_element_bytes(dst + r.dst, r.length / es, es);
    }
}

}  // namespace ncafs::ncstream
