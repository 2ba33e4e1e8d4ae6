#include "aggregation/kerchunk_export/classic_ranges.hpp"

#include "codecs/checked_math.hpp"

namespace ncafs::agg::kerchunk {

RunFn classic_runs(SourceFn source) {
    return [source = std::move(source)](uint64_t first, uint64_t n) -> std::optional<ByteRange> {
        auto extents = source()->big_endian_extents(first, n);
        if (!extents || extents->empty()) return std::nullopt;
        const auto& file = extents->front().file;
        ByteRange r{extents->front().offset, 0};
        for (const auto& e : *extents) {
            if (e.file != file || e.offset != r.offset + r.length) return std::nullopt;
            r.length += e.length;
        }
        auto end = checked::add(r.offset, r.length);
        if (!end || *end > file->size()) return std::nullopt;  // a truncated file: the view gives no such bytes
        return r;
    };
}

RunFn contiguous_runs(uint64_t address, uint64_t element_size) {
    return [=](uint64_t first, uint64_t n) -> std::optional<ByteRange> {
        // The dataset's bounds were checked against the file when read.
        return ByteRange{address + first * element_size, n * element_size};
    };
}

}  // namespace ncafs::agg::kerchunk
