// A CDF-1/2/5 file as a Dataset: metadata from the header, every variable's
// values from a CdfVariableSource reading the file by pread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "io/open_file.hpp"

namespace ncafs::cdf {

// Opens the file, reads its header. The unlimited dimension is
// Dimension::unlimited with length numrecs. Sources keep the file open and
// throw SourceError if it changes afterwards. Throws FormatError, SourceError.
Dataset open_cdf_dataset(const std::string& path);
// The same for a file already opened (confined, regular); `head`: its first
// bytes when read already (read_cdf_header; only read during the call).
Dataset open_cdf_dataset(std::shared_ptr<const OpenFile> file, std::span<const uint8_t> head = {});

}  // namespace ncafs::cdf
