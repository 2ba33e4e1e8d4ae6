#include "codecs/cdf/cdf_view.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "codecs/array_source.hpp"
#include "codecs/cdf/header_writer.hpp"
#include "codecs/cdf/layout.hpp"
#include "codecs/error.hpp"

namespace ncafs {

namespace {

using cdf::CdfLayout;
using cdf::VariableLayout;

// What a byte range of the view consists of.
struct Segment {
    enum Kind { Header, Zero, Data, Pad } kind;
    uint64_t pos;     // in the view
    uint64_t length;
    size_t var = 0;   // Data, Pad
    uint64_t at = 0;  // Header: offset in header; Data: byte in the variable's C-order stream; Pad: byte in the slab
};

struct ViewVariable {
    std::shared_ptr<const ArraySource> source;  // null: all fill values
    std::array<uint8_t, 8> fill_big_endian{};   // one element
    std::array<uint8_t, 8> fill_native{};
    bool pass_through = false;                  // source has the variable's type: no conversion
};

class CdfView final : public VirtualFile {
public:
    CdfView(std::shared_ptr<const Dataset> dataset, const CdfViewOptions& options) : dataset_(std::move(dataset)) {
        auto encoded = cdf::encode_cdf_header(*dataset_, options.version);
        header_bytes_ = std::move(encoded.bytes);
        layout_ = cdf::compute_layout(encoded.header, dataset_->origin);
        vars_.resize(dataset_->variables.size());
        for (size_t i = 0; i < vars_.size(); ++i) {
            const Variable& v = dataset_->variables[i];
            const VariableLayout& vl = layout_.variables[i];
            ViewVariable& w = vars_[i];
            w.source = v.source;
            if (w.source && w.source->shape() != vl.shape)
                throw UsageError(dataset_->origin + ": variable '" + v.name +
                                 "': its source's shape does not match its dimensions");
            w.pass_through = w.source && w.source->type() == v.type;
            // netcdf-c fills with _FillValue when it has the variable's type, else the default.
            auto def = default_fill_big_endian(v.type);
            std::copy(def.begin(), def.end(), w.fill_big_endian.begin());
            if (const Attribute* f = v.find_attribute("_FillValue"); f && f->type == v.type && f->length() >= 1) {
                std::memcpy(w.fill_big_endian.data(), f->values.data(), vl.element_size);
                swap_to_big_endian(v.type, w.fill_big_endian.data(), 1);
            }
            w.fill_native = w.fill_big_endian;
            swap_from_big_endian(v.type, w.fill_native.data(), 1);
            (vl.is_record ? records_ : fixed_).push_back(i);
        }
        // Placement is sequential, so begins (and record offsets) are sorted in these orders.
        fixed_begins_.reserve(fixed_.size());
        for (size_t i : fixed_) fixed_begins_.push_back(layout_.variables[i].begin);
        for (size_t i : records_) record_offsets_.push_back(layout_.variables[i].begin - layout_.begin_rec);
    }

    uint64_t size() const override { return layout_.file_size; }

    void read(uint64_t offset, std::span<uint8_t> out) const override {
        check_range(offset, out.size());
        const uint64_t end = offset + out.size();
        for (uint64_t pos = offset; pos < end;) {
            const Segment s = segment_at(pos, end);
            uint8_t* dst = out.data() + (s.pos - offset);
            switch (s.kind) {
                case Segment::Header: std::memcpy(dst, header_bytes_.data() + s.at, s.length); break;
                case Segment::Zero: std::memset(dst, 0, s.length); break;
                case Segment::Pad: fill_pad(s, dst); break;
                case Segment::Data: read_data(s.var, s.at, dst, s.length); break;
            }
            pos += s.length;
        }
    }

    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        check_range(offset, length);
        std::vector<ViewPiece> out;
        auto computed = [&](uint64_t pos, uint64_t n) {
            if (n == 0) return;
            if (!out.empty() && !out.back().extent && !out.back().run && out.back().offset + out.back().length == pos)
                out.back().length += n;
            else
                out.push_back({pos, n, std::nullopt, std::nullopt});
        };
        for (uint64_t pos = offset; pos < offset + length;) {
            const Segment s = segment_at(pos, offset + length);
            pos += s.length;
            if (s.kind != Segment::Data || !vars_[s.var].pass_through) {
                computed(s.pos, s.length);
                continue;
            }
            const ViewVariable& w = vars_[s.var];
            const uint64_t esize = layout_.variables[s.var].element_size;
            const uint64_t head = std::min(s.length, (esize - s.at % esize) % esize);
            const uint64_t full = (s.length - head) / esize;
            computed(s.pos, head);
            if (full > 0)  // whole elements: read from the source's file where they lie there as they are
                out.push_back({s.pos + head, full * esize, std::nullopt,
                               SourceRun{w.source.get(), (s.at + head) / esize, full}});
            computed(s.pos + head + full * esize, s.length - head - full * esize);
        }
        return out;
    }

private:
    void check_range(uint64_t offset, uint64_t length) const {
        if (offset > size() || length > size() - offset)
            throw UsageError(dataset_->origin + ": CDF view read [" + std::to_string(offset) + ", +" +
                             std::to_string(length) + ") outside the file of " + std::to_string(size()) + " bytes");
    }

    // The segment of the view that starts at pos, ending at `end` at the
    // latest: arithmetic on the layout. Returns before any byte is read, so
    // a read goes from read() straight to the segment's data.
    Segment segment_at(uint64_t pos, uint64_t end) const {
        const uint64_t fixed_end = records_.empty() ? layout_.file_size : layout_.begin_rec;
        if (pos < layout_.header_size) return Segment{Segment::Header, pos, std::min(end, layout_.header_size) - pos, 0, pos};
        if (pos < fixed_end) {
            auto it = std::upper_bound(fixed_begins_.begin(), fixed_begins_.end(), pos);
            uint64_t next = it == fixed_begins_.end() ? fixed_end : *it;
            if (it == fixed_begins_.begin()) return Segment{Segment::Zero, pos, std::min(end, next) - pos};
            size_t k = fixed_[static_cast<size_t>(it - fixed_begins_.begin()) - 1];
            return slab_segment(k, pos, pos - layout_.variables[k].begin, 0, std::min(end, next));
        }
        const uint64_t rel = pos - layout_.begin_rec;
        const uint64_t record = rel / layout_.record_size;
        const uint64_t within = rel % layout_.record_size;
        const uint64_t record_end = std::min(end, pos - within + layout_.record_size);
        auto it = std::upper_bound(record_offsets_.begin(), record_offsets_.end(), within);
        uint64_t next = it == record_offsets_.end() ? record_end : std::min(record_end, pos - within + *it);
        if (it == record_offsets_.begin()) return Segment{Segment::Zero, pos, next - pos};
        size_t idx = static_cast<size_t>(it - record_offsets_.begin()) - 1;
        return slab_segment(records_[idx], pos, within - record_offsets_[idx], record, next);
    }

    // The segment of variable k's slab (record `record`) starting at byte
    // `in_slab`, not beyond `limit`.
    Segment slab_segment(size_t k, uint64_t pos, uint64_t in_slab, uint64_t record, uint64_t limit) const {
        const VariableLayout& vl = layout_.variables[k];
        if (in_slab < vl.data_bytes)
            return Segment{Segment::Data, pos, std::min(limit - pos, vl.data_bytes - in_slab), k,
                           record * vl.data_bytes + in_slab};
        if (in_slab < vl.slab_bytes)
            return Segment{Segment::Pad, pos, std::min(limit - pos, vl.slab_bytes - in_slab), k, in_slab};
        return Segment{Segment::Zero, pos, limit - pos};
    }

    void fill_pad(const Segment& s, uint8_t* dst) const {
        // netcdf-c fills the whole slab with fill values, so a pad byte is the
        // fill byte at its position modulo the element size.
        const uint64_t esize = layout_.variables[s.var].element_size;
        for (uint64_t i = 0; i < s.length; ++i) dst[i] = vars_[s.var].fill_big_endian[(s.at + i) % esize];
    }

    // Bytes [at, at+n) of variable k's big-endian C-order stream: the
    // elements holding them read with one source read (converted when the
    // source has another type), straight into dst when the bytes are whole
    // elements and dst is aligned for them (sources may store typed values).
    void read_data(size_t k, uint64_t at, uint8_t* dst, uint64_t n) const {
        const ViewVariable& w = vars_[k];
        const NcType type = dataset_->variables[k].type;
        const uint64_t esize = type_size(type);
        const uint64_t first = at / esize, count = (at + n + esize - 1) / esize - first;
        const bool in_place = at % esize == 0 && n % esize == 0 && reinterpret_cast<uintptr_t>(dst) % esize == 0;
        std::vector<uint64_t> whole;  // the elements, when dst cannot take them as they are
        if (!in_place) whole.resize((count * esize + 7) / 8);
        uint8_t* elements = in_place ? dst : reinterpret_cast<uint8_t*>(whole.data());
        if (!w.source) {
            fill_elements(elements, w.fill_big_endian.data(), esize, count);
        } else if (w.pass_through) {
            w.source->read_linear(first, count, ByteOrder::Big, elements);
        } else {
            const NcType from = w.source->type();
            std::vector<uint64_t> in((count * type_size(from) + 7) / 8);
            w.source->read_linear(first, count, ByteOrder::Native, in.data());
            convert_elements(from, in.data(), type, elements, count, w.fill_native.data());
            swap_to_big_endian(type, elements, count);
        }
        if (!in_place) std::memcpy(dst, elements + at % esize, n);
    }

    std::shared_ptr<const Dataset> dataset_;
    std::vector<uint8_t> header_bytes_;
    CdfLayout layout_;
    std::vector<ViewVariable> vars_;
    std::vector<size_t> fixed_, records_;
    std::vector<uint64_t> fixed_begins_, record_offsets_;
};

}  // namespace

std::shared_ptr<const VirtualFile> make_cdf_view(std::shared_ptr<const Dataset> dataset, const CdfViewOptions& options) {
    if (!dataset) throw UsageError("make_cdf_view: no dataset");
    return std::make_shared<const CdfView>(std::move(dataset), options);
}

}  // namespace ncafs
