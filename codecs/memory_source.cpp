#include "codecs/memory_source.hpp"

#include <cstring>

#include "codecs/dataset.hpp"
#include "codecs/error.hpp"

namespace ncafs {

MemorySource::MemorySource(NcType t, std::vector<uint64_t> shape, std::vector<uint8_t> values, std::string what)
    : type_(t), shape_(std::move(shape)), values_(std::move(values)), what_(std::move(what)) {
    if (values_.size() != ncafs::element_count(shape_) * type_size(type_))
        throw UsageError("MemorySource: value bytes do not match the shape");
}

void MemorySource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                        void* out) const {
    check_box(shape_, start, count, what_.c_str());
    const size_t rank = shape_.size();
    const size_t es = type_size(type_);
    const uint64_t total = ncafs::element_count(count);
    if (total == 0) return;
    auto* dst = static_cast<uint8_t*>(out);
    if (rank == 0) {
        std::memcpy(dst, values_.data(), es);
    } else {
        // Copy one innermost row at a time, walking the outer indices.
        std::vector<uint64_t> idx(start.begin(), start.end());
        const uint64_t row = count[rank - 1] * es;
        for (uint64_t copied = 0; copied < total * es; copied += row) {
            uint64_t lin = 0;
            for (size_t d = 0; d < rank; ++d) lin = lin * shape_[d] + idx[d];
            std::memcpy(dst + copied, values_.data() + lin * es, row);
            for (size_t d = rank - 1; d-- > 0;) {
                if (++idx[d] < start[d] + count[d]) break;
                idx[d] = start[d];
            }
        }
    }
    if (order == ByteOrder::Big) swap_to_big_endian(type_, dst, total);
}

ConstantSource::ConstantSource(NcType t, std::vector<uint64_t> shape, std::vector<uint8_t> element, std::string what)
    : type_(t), shape_(std::move(shape)), native_(std::move(element)), what_(std::move(what)) {
    if (native_.size() != type_size(type_)) throw UsageError("ConstantSource: the element has the wrong size");
    big_ = native_;
    swap_to_big_endian(type_, big_.data(), 1);
}

void ConstantSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                          void* out) const {
    check_box(shape_, start, count, what_.c_str());
    uint64_t n = 1;
    for (uint64_t c : count) n *= c;
    fill_elements(out, (order == ByteOrder::Big ? big_ : native_).data(), native_.size(), n);
}

}  // namespace ncafs
