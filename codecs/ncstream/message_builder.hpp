// Builds the protobuf messages of the ncafs ncstream profile
// (docs/formats/ncstream.md, "The profile we write") from a Dataset: the one Header, and one Data
// message per slab, a slab being a contiguous row-major box of a variable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/ncstream/ncstream.pb.h"

namespace ncafs::ncstream {

// A contiguous row-major box of one variable: indices start..start+count,
// which are the elements [first_element, first_element + element_count) of
// the variable's C-order linearisation.
struct Slab {
    size_t variable = 0;  // index into Dataset::variables
    std::vector<uint64_t> start;
    std::vector<uint64_t> count;
    uint64_t first_element = 0;
    uint64_t element_count = 0;
};

// Splits every variable, in header order, into slabs whose payload stays at
// or below max_payload_bytes. A variable that fits is one slab of its whole
// shape (zero-size variables too); a bigger one is cut along its outermost
// axis (or, when one index of that axis is already too big, along the first
// axis whose inner rows fit), into contiguous non-overlapping slabs.
// Throws UsageError when a variable would need more than 2^20 slabs.
std::vector<Slab> plan_slabs(const Dataset& ds, uint64_t max_payload_bytes);

// The header message: location, root group (dims, atts, vars), version 1,
// every proto2 required field set.
pb::Header build_header(const Dataset& ds, const std::string& location);

// The v1 Data message of a slab: full section with explicit start/size/stride,
// bigend = true, version 3; compressed payloads get compress = DEFLATE and
// uncompressedSize.
pb::Data build_data_message(const Dataset& ds, const Slab& slab, bool deflated);

// Bytes of the payload of a slab before compression.
uint64_t slab_payload_bytes(const Dataset& ds, const Slab& slab);

// Serialises a message; throws UsageError when protobuf cannot (>= 2 GiB).
std::string serialize_message(const google::protobuf::MessageLite& m, const char* what);

}  // namespace ncafs::ncstream
