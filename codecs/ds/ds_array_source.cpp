#include "codecs/ds/ds_array_source.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "codecs/dataset.hpp"
#include "codecs/error.hpp"

namespace ncafs::ds {

namespace {

constexpr uint64_t kRankStride = 1u << 19;       // elements per rank checkpoint (64 KiB of mask)
constexpr uint64_t kStringStride = 256;          // stored strings per offset checkpoint
constexpr uint64_t kScanBytes = 1u << 20;        // read step of scans
constexpr uint64_t kEagerMaskBytes = 1u << 20;   // masks up to this size are checked at open

bool host_is_little() { return std::endian::native == std::endian::little; }

bool bit(const uint8_t* bytes, uint64_t i) { return (bytes[i / 8] >> (7 - i % 8)) & 1u; }

// Reverses the bytes of n elements of width w.
void byte_swap(uint8_t* p, size_t w, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) std::reverse(p + i * w, p + (i + 1) * w);
}

}  // namespace

void DsArraySource::fail(uint64_t offset, const std::string& reason) const {
    throw FormatError(file_->path(), offset, "variable " + info_.variable + ": " + reason);
}

DsArraySource::DsArraySource(std::shared_ptr<const OpenFile> file, DsBlockInfo info)
    : file_(std::move(file)), info_(std::move(info)), shape_(info_.ds_shape) {
    if (is_string_type(info_.type)) shape_.push_back(info_.string_length);
    mask_bytes_ = info_.has_mask ? (info_.elements + 7) / 8 : 0;
    if (mask_bytes_ > info_.block_length) fail(info_.block_offset, "block of " + std::to_string(info_.block_length) +
                                                   " bytes is shorter than its mask (" + std::to_string(mask_bytes_) + ")");
    values_offset_ = info_.block_offset + mask_bytes_;
    const uint64_t room = info_.block_length - mask_bytes_;
    if (!info_.has_mask) {
        const uint64_t n = info_.elements;
        uint64_t need = 0;
        if (info_.type == DsType::Bool) need = (n + 7) / 8;
        else if (is_string_type(info_.type)) need = n * 8;  // n <= 8 * len was checked by the reader
        else need = n * ds_number_width(info_.type);
        if (need > room)
            fail(info_.block_offset, "block of " + std::to_string(info_.block_length) + " bytes is too short for " +
                                         std::to_string(n) + " values (" + std::to_string(need) + " bytes)");
        kept_total_ = n;
    } else if (mask_bytes_ <= kEagerMaskBytes || is_string_type(info_.type)) {
        build_rank_checkpoints();
        std::call_once(rank_once_, [] {});
    }
    if (!is_string_type(info_.type)) return;

    // Strings: scan the length words once, for the longest string, the
    // checkpoints, and the check against .len.
    const uint64_t m = kept_total_;
    const uint64_t words_end = values_offset_ + m * 8;
    uint64_t total = 0;
    std::vector<uint8_t> buf;
    for (uint64_t k = 0; k < m;) {
        const uint64_t step = std::min<uint64_t>(m - k, kScanBytes / 8);
        buf.resize(step * 8);
        file_->pread_exact(buf.data(), buf.size(), values_offset_ + k * 8);
        for (uint64_t j = 0; j < step; ++j, ++k) {
            if (k % kStringStride == 0) string_checkpoints_.push_back(total);
            const uint64_t len = read_length_word(buf.data() + j * 8);
            if (len > info_.block_length) fail(values_offset_ + k * 8, "string length " + std::to_string(len) +
                                                                     " exceeds the block");
            total += len;
            longest_string_ = std::max(longest_string_, len);
        }
    }
    if (total > info_.block_length || words_end - info_.block_offset + total > info_.block_length)
        fail(info_.block_offset, "strings need " + std::to_string(words_end - info_.block_offset + total) +
                                     " bytes, the block has " + std::to_string(info_.block_length));
}

uint64_t DsArraySource::read_length_word(const uint8_t* p) const {
    uint64_t v;
    std::memcpy(&v, p, 8);
    if (info_.little_endian != host_is_little()) v = __builtin_bswap64(v);
    return v;
}

void DsArraySource::build_rank_checkpoints() const {
    std::vector<uint64_t> checkpoints;
    uint64_t kept = 0;
    std::vector<uint8_t> buf;
    for (uint64_t byte = 0; byte < mask_bytes_;) {
        const uint64_t step = std::min<uint64_t>(mask_bytes_ - byte, kScanBytes);
        buf.resize(step);
        file_->pread_exact(buf.data(), step, info_.block_offset + byte);
        for (uint64_t j = 0; j < step; ++j) {
            const uint64_t first_element = (byte + j) * 8;
            if (first_element % kRankStride == 0) checkpoints.push_back(kept);
            uint8_t b = buf[j];
            if (byte + j == mask_bytes_ - 1 && info_.elements % 8 != 0)
                b &= static_cast<uint8_t>(0xFF00u >> (info_.elements % 8));  // padding bits are not elements
            kept += 8 - static_cast<uint64_t>(std::popcount(b));
        }
        byte += step;
    }
    // The last byte counted its padding bits as kept: remove them.
    const uint64_t padding = mask_bytes_ * 8 - info_.elements;
    kept -= padding;
    const uint64_t room = info_.block_length - mask_bytes_;
    uint64_t need = 0;
    if (info_.type == DsType::Bool) need = (kept + 7) / 8;
    else if (is_string_type(info_.type)) need = kept * 8;
    else need = kept * ds_number_width(info_.type);
    if (need > room)
        fail(info_.block_offset, "block of " + std::to_string(info_.block_length) + " bytes is too short for its " +
                                     std::to_string(kept) + " unmasked values (" + std::to_string(need) +
                                     " bytes after the mask)");
    rank_checkpoints_ = std::move(checkpoints);
    kept_total_ = kept;
}

uint64_t DsArraySource::rank(uint64_t i) const {
    if (!info_.has_mask) return i;
    std::call_once(rank_once_, [this] {
        if (rank_checkpoints_.empty() && mask_bytes_ > 0) build_rank_checkpoints();
    });
    const uint64_t cp = i / kRankStride;
    uint64_t kept = cp < rank_checkpoints_.size() ? rank_checkpoints_[cp] : kept_total_;
    const uint64_t from_byte = cp * (kRankStride / 8), to_bit = i;
    const uint64_t whole_bytes = to_bit / 8 - from_byte;
    std::vector<uint8_t> buf(whole_bytes + (to_bit % 8 ? 1 : 0));
    if (!buf.empty()) file_->pread_exact(buf.data(), buf.size(), info_.block_offset + from_byte);
    for (uint64_t j = 0; j < whole_bytes; ++j) kept += 8 - static_cast<uint64_t>(std::popcount(buf[j]));
    if (to_bit % 8) {
        const uint8_t b = buf[whole_bytes] & static_cast<uint8_t>(0xFF00u >> (to_bit % 8));
        kept += to_bit % 8 - static_cast<uint64_t>(std::popcount(b));
    }
    return kept;
}

uint64_t DsArraySource::string_offset(uint64_t k, std::vector<uint64_t>& lengths, uint64_t count) const {
    // lengths receives the lengths of stored strings [k, k+count).
    lengths.clear();
    if (count == 0) return 0;
    const uint64_t cp = k / kStringStride;
    const uint64_t from = cp * kStringStride;
    std::vector<uint8_t> buf((k + count - from) * 8);
    if (!buf.empty()) file_->pread_exact(buf.data(), buf.size(), values_offset_ + from * 8);
    uint64_t offset = string_checkpoints_.empty() ? 0 : string_checkpoints_[cp];
    for (uint64_t j = from; j < k; ++j) offset += read_length_word(buf.data() + (j - from) * 8);
    lengths.resize(count);
    for (uint64_t j = 0; j < count; ++j) lengths[j] = read_length_word(buf.data() + (k - from + j) * 8);
    return offset;
}

void DsArraySource::read_ds_linear(uint64_t a, uint64_t b, uint8_t* out) const {
    const uint64_t n = b - a;
    if (n == 0) return;
    const size_t esize = type_size(type());
    const uint64_t out_width = is_string_type(info_.type) ? info_.string_length : 1;
    // Which elements are kept.
    std::vector<uint8_t> mask;
    uint64_t r = a, m = n;
    if (info_.has_mask) {
        const uint64_t first_byte = a / 8, last_byte = (b + 7) / 8;
        mask.resize(last_byte - first_byte);
        file_->pread_exact(mask.data(), mask.size(), info_.block_offset + first_byte);
        r = rank(a);
        m = 0;
        for (uint64_t i = a; i < b; ++i) m += !bit(mask.data(), i - first_byte * 8);
        if (r + m > kept_total_) fail(info_.block_offset, "mask changed while reading");
    }
    auto kept_at = [&](uint64_t i) { return mask.empty() || !bit(mask.data(), i - (a / 8) * 8); };
    auto put_fill = [&](uint8_t* dst, uint64_t count) {
        for (uint64_t j = 0; j < count; ++j) std::memcpy(dst + j * esize, info_.fill.data(), esize);
    };

    if (is_string_type(info_.type)) {
        std::vector<uint64_t> lengths;
        const uint64_t start = string_offset(r, lengths, m);
        uint64_t total = 0;
        for (uint64_t l : lengths) total += l;
        std::vector<uint8_t> bytes(total);
        const uint64_t data_start = values_offset_ + kept_total_ * 8;
        if (total) file_->pread_exact(bytes.data(), total, data_start + start);
        uint64_t k = 0, pos = 0;
        for (uint64_t i = a; i < b; ++i) {
            uint8_t* dst = out + (i - a) * out_width;
            if (!kept_at(i)) {
                put_fill(dst, out_width);
                continue;
            }
            const uint64_t len = lengths[k++];
            std::memset(dst, 0, out_width);
            // bytes is empty (data() may be null) when every string is "".
            if (const uint64_t c = std::min(len, out_width)) std::memcpy(dst, bytes.data() + pos, c);
            pos += len;
        }
        return;
    }
    if (info_.type == DsType::Bool) {
        const uint64_t first_byte = r / 8, last_byte = (r + m + 7) / 8;
        std::vector<uint8_t> bits(last_byte - first_byte);
        if (!bits.empty()) file_->pread_exact(bits.data(), bits.size(), values_offset_ + first_byte);
        uint64_t k = r - first_byte * 8;
        for (uint64_t i = a; i < b; ++i) {
            if (!kept_at(i)) put_fill(out + (i - a), 1);
            else out[i - a] = bit(bits.data(), k++) ? 1 : 0;
        }
        return;
    }
    const size_t w = ds_number_width(info_.type);
    if (mask.empty()) {
        file_->pread_exact(out, n * w, values_offset_ + a * w);
        if (w > 1 && info_.little_endian != host_is_little()) byte_swap(out, w, n);
        return;
    }
    std::vector<uint8_t> values(m * w);
    if (m) file_->pread_exact(values.data(), values.size(), values_offset_ + r * w);
    if (w > 1 && info_.little_endian != host_is_little()) byte_swap(values.data(), w, m);
    uint64_t k = 0;
    for (uint64_t i = a; i < b; ++i) {
        if (!kept_at(i)) put_fill(out + (i - a) * w, 1);
        else std::memcpy(out + (i - a) * w, values.data() + (k++) * w, w);
    }
}

void DsArraySource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                         void* out) const {
    check_box(shape_, start, count, info_.variable.c_str());
    const size_t esize = type_size(type());
    const uint64_t total = ncafs::element_count(count);
    if (total == 0) return;
    auto* dst = static_cast<uint8_t*>(out);
    const bool strings = is_string_type(info_.type);
    const size_t rank_ds = info_.ds_shape.size();
    const uint64_t out_width = strings ? info_.string_length : 1;  // elements of type() per ds element
    const size_t elem_bytes = out_width * esize;

    if (rank_ds == 0) {
        std::vector<uint8_t> one(elem_bytes);
        read_ds_linear(0, 1, one.data());
        const uint64_t c0 = strings ? start[0] : 0;
        std::memcpy(dst, one.data() + c0 * esize, total * esize);
    } else {
        // Row-major walk over the ds part of the box; each innermost ds row
        // is one linear run, read once (merged runs when the box is dense).
        std::vector<uint64_t> stride(rank_ds, 1);
        for (size_t d = rank_ds - 1; d-- > 0;) stride[d] = stride[d + 1] * info_.ds_shape[d + 1];
        uint64_t lo = 0, hi = 0, box_ds = 1;
        for (size_t d = 0; d < rank_ds; ++d) {
            lo += start[d] * stride[d];
            hi += (start[d] + count[d] - 1) * stride[d];
            box_ds *= count[d];
        }
        hi += 1;
        const uint64_t c0 = strings ? start[rank_ds] : 0, cn = strings ? count[rank_ds] : 1;
        const uint64_t row = count[rank_ds - 1];
        const bool dense = (hi - lo) * elem_bytes <= std::max<uint64_t>(4 * box_ds * elem_bytes, 1u << 20);
        std::vector<uint8_t> span_buf;
        if (dense) {
            span_buf.resize((hi - lo) * elem_bytes);
            read_ds_linear(lo, hi, span_buf.data());
        }
        std::vector<uint8_t> row_buf(dense ? 0 : row * elem_bytes);
        std::vector<uint64_t> idx(start.begin(), start.begin() + rank_ds);
        uint64_t written = 0;
        while (true) {
            uint64_t lin = 0;
            for (size_t d = 0; d < rank_ds; ++d) lin += idx[d] * stride[d];
            const uint8_t* src;
            if (dense) {
                src = span_buf.data() + (lin - lo) * elem_bytes;
            } else {
                read_ds_linear(lin, lin + row, row_buf.data());
                src = row_buf.data();
            }
            if (!strings) {
                std::memcpy(dst + written * esize, src, row * esize);
                written += row;
            } else {
                for (uint64_t j = 0; j < row; ++j) {
                    std::memcpy(dst + written * esize, src + j * elem_bytes + c0 * esize, cn * esize);
                    written += cn;
                }
            }
            // Next row: increment the ds index, innermost-but-one first.
            size_t d = rank_ds - 1;
            bool done = true;
            while (d-- > 0) {
                if (++idx[d] < start[d] + count[d]) {
                    done = false;
                    break;
                }
                idx[d] = start[d];
            }
            if (done) break;
        }
    }
    if (order == ByteOrder::Big && esize > 1 && host_is_little()) swap_to_big_endian(type(), dst, total);
}

std::optional<std::vector<FileExtent>> DsArraySource::big_endian_extents(uint64_t first, uint64_t n) const {
    if (info_.has_mask || is_string_type(info_.type) || info_.type == DsType::Bool) return std::nullopt;
    const size_t w = ds_number_width(info_.type);
    if (w > 1 && info_.little_endian) return std::nullopt;
    if (first > info_.elements || n > info_.elements - first) return std::nullopt;
    if (n == 0) return std::vector<FileExtent>{};
    return std::vector<FileExtent>{FileExtent{file_, values_offset_ + first * w, n * w}};
}

}  // namespace ncafs::ds
