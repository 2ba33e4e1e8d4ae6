// A CDF-1/2/5 file as a Dataset: metadata from the header, every variable's
// values from a CdfVariableSource reading the file by pread.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "codecs/dataset.hpp"

namespace ncafs::cdf {

// True when the 4 bytes are 'C' 'D' 'F' followed by version 1, 2 or 5.
bool has_cdf_magic(std::span<const uint8_t> first4);

// Opens the file, reads its header. The unlimited dimension is
// Dimension::unlimited with length numrecs. Sources keep the file open and
// throw SourceError if it changes afterwards. Throws FormatError, SourceError.
Dataset open_cdf_dataset(const std::string& path);

}  // namespace ncafs::cdf
