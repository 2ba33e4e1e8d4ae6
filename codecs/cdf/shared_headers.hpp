// Classic partitions of one aggregation mostly share one header layout: the
// same dimensions, variables, types and attributes, only numrecs (and the
// file) differing. The header reader remembers the last few headers it
// parsed, with their bytes; a file whose header bytes equal one of them
// byte for byte, the numrecs field aside, gets a copy of that parse with
// its own numrecs instead of a parse (the data placement is still checked
// against its own size by the caller). Only headers that fit in the
// reader's first read are remembered. Thread-safe, process-wide, bounded.
#pragma once

#include <cstdint>
#include <span>

#include "codecs/cdf/header.hpp"

namespace ncafs::cdf {

// When `head` (the first bytes of a file, the header included) begins with
// a remembered header: that header with head's numrecs, into `out`.
bool find_shared_header(std::span<const uint8_t> head, CdfHeader& out);
// Remembers a header parsed from `bytes` (its first header_size bytes).
void remember_shared_header(std::span<const uint8_t> bytes, const CdfHeader& header);

}  // namespace ncafs::cdf
