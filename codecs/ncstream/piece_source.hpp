// The ArraySource of a variable read from an ncstream file: the boxes its
// data messages cover ("pieces", later ones taking precedence, as the grammar
// says), the rest filled with _FillValue or the type's default fill.
// Uncompressed pieces are pread where they lie; deflated ones are inflated
// on demand, small ones kept in a bounded cache shared by the dataset, large
// ones read block by block through an InflateIndex (blocks cached likewise).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "codecs/array_source.hpp"
#include "io/lru_cache.hpp"
#include "codecs/ncstream/inflate_index.hpp"
#include "io/open_file.hpp"
#include "io/mutex.hpp"

namespace ncafs::ncstream {

struct StoredPiece {
    std::vector<uint64_t> start;  // box in the variable
    std::vector<uint64_t> count;
    uint64_t file_offset = 0;     // first payload byte in the file (raw or compressed)
    uint64_t stored_length = 0;   // payload bytes in the file
    uint64_t raw_length = 0;      // bytes of the box's elements (after inflate)
    bool deflated = false;
    bool big_endian = true;
    uint64_t message_offset = 0;  // where its data message starts, for errors
    // Header immediate data (Variable.data) instead of file bytes.
    std::shared_ptr<const std::vector<uint8_t>> immediate;
};

// Inflated payloads keyed by their file offset; least recently used evicted
// beyond `capacity` bytes. One per opened file, shared by its sources.
class InflateCache {
public:
    explicit InflateCache(uint64_t capacity) : capacity_(capacity), entries_(static_cast<size_t>(capacity)) {}
    uint64_t capacity() const { return capacity_; }
    // block: UINT64_MAX for a whole payload, else a block of an InflateIndex.
    std::shared_ptr<const std::vector<uint8_t>> find(uint64_t key, uint64_t block = UINT64_MAX);
    void insert(uint64_t key, std::shared_ptr<const std::vector<uint8_t>> value, uint64_t block = UINT64_MAX);

private:
    using Key = std::pair<uint64_t, uint64_t>;  // (file offset, block)
    struct KeyHash {
        size_t operator()(const Key& k) const {
            return std::hash<uint64_t>{}(k.first) ^ (std::hash<uint64_t>{}(k.second) * 0x9e3779b97f4a7c15ull);
        }
    };
    const uint64_t capacity_;
    Mutex mutex_;  // lock order: a leaf
    LruCache<Key, std::shared_ptr<const std::vector<uint8_t>>, KeyHash, ByteWeight> entries_ NCAFS_GUARDED_BY(mutex_);
};

class PieceSource final : public ArraySource {
public:
    // fill_native: one element of t in native order, used where no piece lies.
    PieceSource(std::shared_ptr<const OpenFile> file, std::string variable, NcType t, std::vector<uint64_t> shape,
                std::vector<uint8_t> fill_native, std::vector<StoredPiece> pieces,
                std::shared_ptr<InflateCache> cache);

    NcType type() const override { return type_; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    // Passes through when one uncompressed big-endian piece covers the whole
    // variable (what our own writer produces below 2 GiB).
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override;

private:
    struct Run {
        uint64_t src = 0;  // byte offset in the piece's raw bytes
        uint64_t dst = 0;  // byte offset in the output
        uint64_t length = 0;
    };
    void copy_piece(const StoredPiece& p, const std::vector<Run>& runs, uint8_t* out) const;
    std::shared_ptr<const std::vector<uint8_t>> inflated(const StoredPiece& p) const;
    // Payloads too big for the cache: read block by block through an InflateIndex.
    void copy_indexed(const StoredPiece& p, const std::vector<Run>& runs, uint8_t* out) const;
    std::shared_ptr<InflateIndex> index_for(const StoredPiece& p) const;
    std::shared_ptr<const std::vector<uint8_t>> inflated_block(const StoredPiece& p, InflateIndex& index,
                                                               uint64_t b) const;

    std::shared_ptr<const OpenFile> file_;
    std::string variable_;
    NcType type_;
    std::vector<uint64_t> shape_;
    std::vector<uint8_t> fill_native_;
    std::vector<StoredPiece> pieces_;
    std::shared_ptr<InflateCache> cache_;
    mutable Mutex indexes_mutex_;  // lock order: a leaf
    mutable std::map<uint64_t, std::shared_ptr<InflateIndex>> indexes_ NCAFS_GUARDED_BY(indexes_mutex_);  // by payload file offset
};

}  // namespace ncafs::ncstream
