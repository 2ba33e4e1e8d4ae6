// The block of one variable whose values come from a ChunkProducer
// (an ArraySource, possibly through the cf rules):
//   [mask: ceil(N/8) bytes, when some element is missing]
//   values of the M kept elements: M * width bytes, or for char arrays
//   (ds "str" of 1-byte strings) M 8-byte length words (all 1) then M bytes.
// Without a mask, value k is element k: any byte range maps to an element
// range by arithmetic. With a mask, elements are grouped in chunks of
// kChunkElements; per-chunk kept counts (from one counting pass) locate
// value k, and a read recomputes the chunks it touches.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "codecs/ds/ds_layout.hpp"
#include "io/mutex.hpp"

namespace ncafs::ds {

inline constexpr uint64_t kChunkElements = 65536;  // multiple of 8: chunks own whole mask bytes

class ChunkProducer {
public:
    virtual ~ChunkProducer() = default;
    // Bytes per value as stored in the block (1 for chars).
    virtual size_t width() const = 0;
    // Elements [first, first+count): missing[i] = 1 where masked, values in
    // the block's encoding (width bytes each, file byte order), for all
    // elements including masked ones.
    virtual void produce(uint64_t first, uint64_t count, uint8_t* missing, uint8_t* values) const = 0;
    // The source whose big-endian elements are the block's values as they
    // are (raw views): their bytes may lie in files (a SourceRun); null when not.
    virtual const ArraySource* passed_through() const { return nullptr; }
};

struct ValueBlockPlan {
    uint64_t elements = 0;         // N
    bool char_strings = false;     // values are 1-byte strings with length words
    bool little_endian = false;    // byte order of the length words
    // Per-chunk prefix sums of kept elements (size chunks+1); empty when no
    // element is missing (no mask, every element kept).
    std::vector<uint64_t> kept_before_chunk;

    bool has_mask() const { return !kept_before_chunk.empty(); }
    uint64_t kept() const { return has_mask() ? kept_before_chunk.back() : elements; }
};

// One pass over the producer: the plan (kept counts per chunk). Memory: one
// chunk's buffers plus 8 bytes per chunk.
ValueBlockPlan count_missing(const ChunkProducer& producer, uint64_t elements, bool char_strings, bool little_endian);

class ValueBlock : public DsBlock {
public:
    ValueBlock(std::shared_ptr<const ChunkProducer> producer, ValueBlockPlan plan);
    uint64_t length() const override;
    void read(uint64_t offset, std::span<uint8_t> out) const override;
    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override;

private:
    struct Chunk {
        uint64_t index = 0;
        std::vector<uint8_t> mask_bits;  // packed, MSB first
        std::vector<uint8_t> kept_values;
    };
    std::shared_ptr<const Chunk> chunk(uint64_t index) const;
    void read_mask(uint64_t offset, std::span<uint8_t> out) const;
    void read_values(uint64_t offset, std::span<uint8_t> out) const;  // offset within the value bytes
    uint64_t mask_bytes() const { return plan_.has_mask() ? (plan_.elements + 7) / 8 : 0; }
    uint64_t length_words_bytes() const { return plan_.char_strings ? 8 * plan_.kept() : 0; }

    std::shared_ptr<const ChunkProducer> producer_;
    ValueBlockPlan plan_;
    size_t width_;
    mutable Mutex cache_mutex_;  // lock order: a leaf (values are produced outside it)
    mutable std::shared_ptr<const Chunk> last_chunk_ NCAFS_GUARDED_BY(cache_mutex_);  // sequential readers touch one chunk many times
};

}  // namespace ncafs::ds
