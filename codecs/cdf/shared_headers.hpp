// Classic partitions of one aggregation mostly share one header layout: the
// same dimensions, variables, types and attributes, only numrecs (and the
// file) differing. The header reader remembers the last few headers it
// parsed, with their bytes; a file whose header bytes equal one of them
// byte for byte, the numrecs field aside, gets a copy of that parse with
// its own numrecs instead of a parse. Each remembered header also keeps the
// data layout last checked for it (one numrecs): check_data_placement's
// outcome depends on the file only through its size (every variable's data
// must end within it), so a file of the same header bytes and numrecs, at
// least that long, shares that layout instead of computing and checking it
// again. Only headers that fit in the reader's first read are remembered.
// Thread-safe, process-wide, bounded.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "codecs/cdf/header.hpp"
#include "codecs/cdf/layout.hpp"

namespace ncafs::cdf {

// One remembered header (opaque): what find and remember return, to ask
// for or keep its checked layout.
struct RememberedHeader;

// When `head` (the first bytes of a file, the header included) begins with
// a remembered header: that header with head's numrecs, into `out`, and
// the entry; else null.
std::shared_ptr<RememberedHeader> find_shared_header(std::span<const uint8_t> head, CdfHeader& out);
// Remembers a header parsed from `bytes` (its first header_size bytes);
// null when it is not remembered (too large, too short).
std::shared_ptr<RememberedHeader> remember_shared_header(std::span<const uint8_t> bytes, const CdfHeader& header);

// The layout checked for this header with `numrecs` records, when a file
// of at least its data end was checked with it and `file_size` reaches
// that end too; else null.
std::shared_ptr<const CdfLayout> shared_layout(RememberedHeader& entry, uint64_t numrecs, uint64_t file_size);
// Keeps `layout`, checked for `numrecs` records and valid for every file of
// at least `data_end` bytes (replacing the one kept before).
void remember_layout(RememberedHeader& entry, uint64_t numrecs, uint64_t data_end,
                     std::shared_ptr<const CdfLayout> layout);

}  // namespace ncafs::cdf
