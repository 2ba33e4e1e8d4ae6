#include "codecs/ds/ds_value_block.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::ds {

namespace {
constexpr uint64_t kMaxStepElements = 1u << 20;  // bounds the buffers of one unmasked read step
}

ValueBlockPlan count_missing(const ChunkProducer& producer, uint64_t elements, bool char_strings,
                             bool little_endian) {
    ValueBlockPlan plan{elements, char_strings, little_endian, {}};
    const uint64_t chunks = (elements + kChunkElements - 1) / kChunkElements;
    std::vector<uint64_t> kept(chunks + 1, 0);
    std::vector<uint8_t> missing(std::min(elements, kChunkElements));
    std::vector<uint8_t> values(missing.size() * producer.width());
    bool any_missing = false;
    for (uint64_t c = 0; c < chunks; ++c) {
        const uint64_t first = c * kChunkElements, n = std::min(kChunkElements, elements - first);
        producer.produce(first, n, missing.data(), values.data());
        uint64_t m = 0;
        for (uint64_t i = 0; i < n; ++i) m += missing[i];
        any_missing = any_missing || m > 0;
        kept[c + 1] = kept[c] + (n - m);
    }
    if (any_missing) plan.kept_before_chunk = std::move(kept);
    return plan;
}

ValueBlock::ValueBlock(std::shared_ptr<const ChunkProducer> producer, ValueBlockPlan plan)
    : producer_(std::move(producer)), plan_(std::move(plan)), width_(producer_->width()) {}

uint64_t ValueBlock::length() const {
    return mask_bytes() + length_words_bytes() + plan_.kept() * width_;
}

std::shared_ptr<const ValueBlock::Chunk> ValueBlock::chunk(uint64_t index) const {
    {
        MutexLock lock(cache_mutex_);
        if (last_chunk_ && last_chunk_->index == index) return last_chunk_;
    }
    auto c = std::make_shared<Chunk>();
    c->index = index;
    const uint64_t first = index * kChunkElements, n = std::min(kChunkElements, plan_.elements - first);
    std::vector<uint8_t> missing(n), values(n * width_);
    producer_->produce(first, n, missing.data(), values.data());
    c->mask_bits.assign((n + 7) / 8, 0);
    c->kept_values.reserve(values.size());
    for (uint64_t i = 0; i < n; ++i) {
        if (missing[i]) c->mask_bits[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
        else c->kept_values.insert(c->kept_values.end(), values.begin() + i * width_, values.begin() + (i + 1) * width_);
    }
    const uint64_t expected = plan_.kept_before_chunk[index + 1] - plan_.kept_before_chunk[index];
    if (c->kept_values.size() != expected * width_)
        throw SourceError("ds view", "the values changed since the view was sized (chunk " + std::to_string(index) +
                                         " now keeps " + std::to_string(c->kept_values.size() / width_) +
                                         " elements, not " + std::to_string(expected) + ")");
    MutexLock lock(cache_mutex_);
    last_chunk_ = c;
    return c;
}

void ValueBlock::read_mask(uint64_t offset, std::span<uint8_t> out) const {
    const uint64_t chunk_bytes = kChunkElements / 8;
    size_t done = 0;
    while (done < out.size()) {
        const uint64_t pos = offset + done;
        auto c = chunk(pos / chunk_bytes);
        const uint64_t in_chunk = pos % chunk_bytes;
        const size_t n = std::min<uint64_t>(c->mask_bits.size() - in_chunk, out.size() - done);
        std::memcpy(out.data() + done, c->mask_bits.data() + in_chunk, n);
        done += n;
    }
}

void ValueBlock::read_values(uint64_t offset, std::span<uint8_t> out) const {
    size_t done = 0;
    if (!plan_.has_mask()) {
        std::vector<uint8_t> missing, values;
        while (done < out.size()) {
            const uint64_t pos = offset + done;
            const uint64_t first = pos / width_;
            const uint64_t last = std::min((pos + (out.size() - done) + width_ - 1) / width_, first + kMaxStepElements);
            missing.resize(last - first);
            values.resize((last - first) * width_);
            producer_->produce(first, last - first, missing.data(), values.data());
            const uint64_t skip = pos - first * width_;
            const size_t n = std::min<uint64_t>(values.size() - skip, out.size() - done);
            std::memcpy(out.data() + done, values.data() + skip, n);
            done += n;
        }
        return;
    }
    const auto& kb = plan_.kept_before_chunk;
    while (done < out.size()) {
        const uint64_t pos = offset + done;
        const uint64_t k = pos / width_;
        // The chunk holding kept value k: last c with kb[c] <= k and kb[c+1] > k.
        const auto it = std::upper_bound(kb.begin(), kb.end(), k);
        const uint64_t c = static_cast<uint64_t>(it - kb.begin()) - 1;
        auto ch = chunk(c);
        const uint64_t in_chunk = pos - kb[c] * width_;
        const size_t n = std::min<uint64_t>(ch->kept_values.size() - in_chunk, out.size() - done);
        std::memcpy(out.data() + done, ch->kept_values.data() + in_chunk, n);
        done += n;
    }
}

void ValueBlock::read(uint64_t offset, std::span<uint8_t> out) const {
    if (offset > length() || out.size() > length() - offset) throw UsageError("ds block: read outside the block");
    size_t done = 0;
    while (done < out.size()) {
        const uint64_t pos = offset + done;
        const size_t left = out.size() - done;
        if (pos < mask_bytes()) {
            const size_t n = std::min<uint64_t>(mask_bytes() - pos, left);
            read_mask(pos, out.subspan(done, n));
            done += n;
        } else if (pos < mask_bytes() + length_words_bytes()) {
            // Every string is one byte long: words of value 1.
            const uint64_t rel = pos - mask_bytes();
            const size_t n = std::min<uint64_t>(length_words_bytes() - rel, left);
            for (size_t i = 0; i < n; ++i) {
                const uint64_t b = (rel + i) % 8;
                out[done + i] = (plan_.little_endian ? b == 0 : b == 7) ? 1 : 0;
            }
            done += n;
        } else {
            read_values(pos - mask_bytes() - length_words_bytes(), out.subspan(done));
            done = out.size();
        }
    }
}

std::vector<ViewPiece> ValueBlock::pieces(uint64_t offset, uint64_t length) const {
    const uint64_t values_start = mask_bytes() + length_words_bytes();
    std::vector<ViewPiece> result;
    auto computed = [&](uint64_t at, uint64_t n) {
        if (n) result.push_back(ViewPiece{at, n, std::nullopt});
    };
    if (plan_.has_mask() || offset + length <= values_start) {
        computed(offset, length);
        return result;
    }
    uint64_t pos = offset;
    const uint64_t end = offset + length;
    if (pos < values_start) {
        computed(pos, values_start - pos);
        pos = values_start;
    }
    // Element-aligned middle part: a run of the producer's source.
    const uint64_t rel = pos - values_start, rel_end = end - values_start;
    const uint64_t first = (rel + width_ - 1) / width_, last = rel_end / width_;
    const ArraySource* source = producer_->passed_through();
    if (first >= last || !source) {
        computed(pos, end - pos);
        return result;
    }
    computed(pos, values_start + first * width_ - pos);
    const uint64_t at = values_start + first * width_;
    result.push_back(ViewPiece{at, (last - first) * width_, std::nullopt, SourceRun{source, first, last - first}});
    computed(at + (last - first) * width_, end - at - (last - first) * width_);
    return result;
}

}  // namespace ncafs::ds
