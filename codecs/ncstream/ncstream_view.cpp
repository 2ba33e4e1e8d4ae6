#include "codecs/ncstream/ncstream_view.hpp"

#include <cstring>
#include <string>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/ncstream/ncstream_layout.hpp"

namespace ncafs {

namespace {

using ncstream::LayoutSegment;
using ncstream::NcstreamLayout;

class NcstreamView final : public VirtualFile {
public:
    NcstreamView(std::shared_ptr<const Dataset> ds, const std::string& location)
        : ds_(std::move(ds)), layout_(ncstream::build_layout(*ds_, location.empty() ? ds_->origin : location)) {}

    uint64_t size() const override { return layout_.size; }

    void read(uint64_t offset, std::span<uint8_t> out) const override {
        check_range(offset, out.size());
        uint64_t pos = offset;
        uint8_t* dst = out.data();
        uint64_t left = out.size();
        for (size_t si = left ? layout_.segment_at(pos) : 0; left > 0; ++si) {
            const LayoutSegment& seg = layout_.segments[si];
            const uint64_t local = pos - seg.offset;
            const uint64_t n = std::min(left, seg.length - local);
            if (seg.kind == LayoutSegment::Kind::Bytes)
                std::memcpy(dst, layout_.bytes.data() + seg.bytes_at + local, n);
            else
                read_payload(seg, local, dst, n);
            dst += n;
            pos += n;
            left -= n;
        }
    }

    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        check_range(offset, length);
        std::vector<ViewPiece> out;
        auto computed = [&](uint64_t off, uint64_t len) {
            if (len == 0) return;
            if (!out.empty() && !out.back().extent && !out.back().run && out.back().offset + out.back().length == off)
                out.back().length += len;
            else
                out.push_back(ViewPiece{off, len, std::nullopt});
        };
        uint64_t pos = offset;
        uint64_t left = length;
        for (size_t si = left ? layout_.segment_at(pos) : 0; left > 0; ++si) {
            const LayoutSegment& seg = layout_.segments[si];
            const uint64_t local = pos - seg.offset;
            const uint64_t n = std::min(left, seg.length - local);
            if (seg.kind == LayoutSegment::Kind::Bytes) {
                computed(pos, n);
            } else {
                // Whole elements in the middle may already lie in a file
                // big-endian; partial elements at either edge are computed.
                const auto& slab = layout_.slabs[seg.slab];
                const ArraySource& src = *ds_->variables[slab.variable].source;
                const uint64_t es = type_size(src.type());
                const uint64_t first_full = (local + es - 1) / es, end_full = (local + n) / es;
                if (end_full <= first_full) {
                    computed(pos, n);
                } else {
                    computed(pos, first_full * es - local);
                    out.push_back(ViewPiece{seg.offset + first_full * es, (end_full - first_full) * es, std::nullopt,
                                            SourceRun{&src, slab.first_element + first_full, end_full - first_full}});
                    computed(seg.offset + end_full * es, local + n - end_full * es);
                }
            }
            pos += n;
            left -= n;
        }
        return out;
    }

private:
    void check_range(uint64_t offset, uint64_t length) const {
        if (offset > layout_.size || length > layout_.size - offset)
            throw UsageError("ncstream view of " + ds_->origin + ": range [" + std::to_string(offset) + ", +" +
                             std::to_string(length) + ") outside the file of " + std::to_string(layout_.size) +
                             " bytes");
    }

    // Bytes [local, local+n) of a payload segment: the big-endian elements of
    // the slab, one read_linear for the whole elements, a scratch element for
    // a partial one at either edge.
    void read_payload(const LayoutSegment& seg, uint64_t local, uint8_t* dst, uint64_t n) const {
        const auto& slab = layout_.slabs[seg.slab];
        const ArraySource& src = *ds_->variables[slab.variable].source;
        const uint64_t es = type_size(src.type());
        const uint64_t end = local + n;
        uint64_t first = local / es;
        const uint64_t last = (end + es - 1) / es;  // one past the last element touched
        uint8_t scratch[8];
        auto partial = [&](uint64_t element) {
            src.read_linear(slab.first_element + element, 1, ByteOrder::Big, scratch);
            const uint64_t lo = std::max(local, element * es), hi = std::min(end, (element + 1) * es);
            std::memcpy(dst + (lo - local), scratch + (lo - element * es), hi - lo);
        };
        if (local % es != 0) partial(first++);
        uint64_t full_end = end / es;
        if (full_end < first) return;  // the single partial element was all
        if (full_end > first)
            src.read_linear(slab.first_element + first, full_end - first, ByteOrder::Big, dst + (first * es - local));
        if (end % es != 0 && last - 1 >= first) partial(last - 1);
    }

    std::shared_ptr<const Dataset> ds_;
    NcstreamLayout layout_;
};

}  // namespace

std::shared_ptr<const VirtualFile> make_ncstream_view(std::shared_ptr<const Dataset> dataset, std::string location) {
    if (!dataset) throw UsageError("make_ncstream_view: no dataset");
    return std::make_shared<NcstreamView>(std::move(dataset), location);
}

}  // namespace ncafs
