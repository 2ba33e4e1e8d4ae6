// Where every byte of an uncompressed ncstream file lies, computed from
// metadata alone: the framed header, then per slab the framed Data message
// and the regData length ("prefix" bytes, kept in memory), then the payload
// (elements of a variable, read on demand), then MAGIC_END.
//
//   size = 4 + (4 + |varint(H)| + H)
//        + sum over slabs (4 + |varint(D)| + D + |varint(N)| + N) + 4
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/ncstream/message_builder.hpp"

namespace ncafs::ncstream {

struct LayoutSegment {
    enum class Kind { Bytes, Payload };
    Kind kind = Kind::Bytes;
    uint64_t offset = 0;  // in the file
    uint64_t length = 0;
    size_t bytes_at = 0;  // Bytes: position in NcstreamLayout::bytes
    size_t slab = 0;      // Payload: index into NcstreamLayout::slabs
};

struct NcstreamLayout {
    std::vector<Slab> slabs;
    std::string bytes;  // all framing and message bytes, in file order
    std::vector<LayoutSegment> segments;  // in file order, contiguous, no empty ones
    uint64_t size = 0;
    uint64_t header_message_size = 0;  // H

    // Index of the segment holding byte `offset` (< size).
    size_t segment_at(uint64_t offset) const;
};

// Throws UsageError unless every variable has a source of its declared type
// and shape.
void check_sources(const Dataset& ds);

// Builds the layout of the uncompressed profile. Never reads variable data.
// Throws UsageError for a dataset the profile cannot hold (a variable without
// source, a source whose type/shape disagree with the metadata, ...).
NcstreamLayout build_layout(const Dataset& ds, const std::string& location);

}  // namespace ncafs::ncstream
