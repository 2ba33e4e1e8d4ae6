#include "codecs/ncstream/ncstream_layout.hpp"

#include <algorithm>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/ncstream/framing.hpp"

namespace ncafs::ncstream {

namespace {

void append_magic(std::string& out, const Magic& m) { out.append(reinterpret_cast<const char*>(m.data()), m.size()); }

}  // namespace

void check_sources(const Dataset& ds) {
    for (const Variable& v : ds.variables) {
        if (!v.source) throw UsageError("ncstream: variable " + v.name + " of " + ds.origin + " has no data source");
        if (v.source->type() != v.type || v.source->shape() != ds.shape(v))
            throw UsageError("ncstream: the data source of variable " + v.name + " of " + ds.origin +
                             " disagrees with its declared type or shape");
    }
}

size_t NcstreamLayout::segment_at(uint64_t offset) const {
    auto it = std::upper_bound(segments.begin(), segments.end(), offset,
                               [](uint64_t off, const LayoutSegment& s) { return off < s.offset; });
    return static_cast<size_t>(it - segments.begin()) - 1;
}

NcstreamLayout build_layout(const Dataset& ds, const std::string& location) {
    check_sources(ds);
    NcstreamLayout layout;
    layout.slabs = plan_slabs(ds, kMaxJavaBlock);

    std::string& bytes = layout.bytes;
    uint64_t offset = 0;
    // Bytes appended to `bytes` since the last segment become one segment.
    size_t pending_from = 0;
    auto close_bytes = [&] {
        if (bytes.size() > pending_from) {
            const uint64_t n = bytes.size() - pending_from;
            layout.segments.push_back({LayoutSegment::Kind::Bytes, offset, n, pending_from, 0});
            offset += n;
            pending_from = bytes.size();
        }
    };

    append_magic(bytes, kMagicStart);
    const std::string header = serialize_message(build_header(ds, location), "header");
    layout.header_message_size = header.size();
    append_magic(bytes, kMagicHeader);
    append_varint(bytes, header.size());
    bytes += header;

    for (size_t si = 0; si < layout.slabs.size(); ++si) {
        const Slab& slab = layout.slabs[si];
        const std::string data = serialize_message(build_data_message(ds, slab, false), "data");
        const uint64_t payload = slab_payload_bytes(ds, slab);
        append_magic(bytes, kMagicData);
        append_varint(bytes, data.size());
        bytes += data;
        append_varint(bytes, payload);
        if (payload > 0) {
            close_bytes();
            layout.segments.push_back({LayoutSegment::Kind::Payload, offset, payload, 0, si});
            offset += payload;
        }
    }
    append_magic(bytes, kMagicEnd);
    close_bytes();
    layout.size = offset;
    return layout;
}

}  // namespace ncafs::ncstream
