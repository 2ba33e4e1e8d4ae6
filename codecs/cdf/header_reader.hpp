// Reads the header of a CDF-1, CDF-2 or CDF-5 file into a CdfHeader, checking
// everything the spec (and netcdf-c) forbid. Never trusts a count: every list
// and value is checked against the bytes present before anything is allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codecs/cdf/header.hpp"
#include "codecs/cdf/layout.hpp"
#include "io/open_file.hpp"

namespace ncafs::cdf {

// Parses the header of a file whose whole content is `bytes` (tests, fuzzing).
// `file` names it in errors. Throws FormatError.
CdfHeader parse_cdf_header(std::span<const uint8_t> bytes, const std::string& file);

// How many bytes the reader reads first (a header that fits needs no more).
inline constexpr uint64_t kHeaderFirstRead = 64 * 1024;

// Reads the header with a few preads (a buffer that doubles as needed, never
// beyond the file size; large attribute values are read straight into the
// attribute). Throws FormatError for invalid headers, SourceError for I/O
// errors. When `layout` is given it receives compute_layout(header), which
// the reader computes anyway to check the data placement. With
// AttributeValues::Skip every attribute's values are checked to be present
// but neither read nor kept (names and types only: length() is 0), for
// callers that look at attribute names alone. `head`: the file's first
// bytes when the caller read them already (pread_exact, the sniff of
// open_dataset), used instead of a first read. Headers equal but for
// numrecs share one parse (shared_headers.hpp).
enum class AttributeValues { Read, Skip };
CdfHeader read_cdf_header(const OpenFile& file, CdfLayout* layout = nullptr,
                          AttributeValues values = AttributeValues::Read, std::span<const uint8_t> head = {});
// The same with attribute values, the layout into `layout`: shared by files
// of one header, numrecs and placement (shared_headers.hpp) rather than
// computed and checked for each (open_cdf_dataset: partitions alike).
CdfHeader read_cdf_header(const OpenFile& file, std::shared_ptr<const CdfLayout>& layout,
                          std::span<const uint8_t> head);

// Called before any nc_open: netcdf-c trusts a classic header's counts (a
// 32-byte CDF-1 file claiming 2^31-1 variables crashes it). When the file
// has CDF magic, reads its header with this reader and throws FormatError if
// it is invalid; other files (HDF5...) pass untouched.
void check_classic_header(const std::string& path);
void check_classic_header(const OpenFile& file);

}  // namespace ncafs::cdf
