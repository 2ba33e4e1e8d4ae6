// Reads .ncs files (ncstream written to disk, as by netcdf-java's
// NcStreamWriter or by ncafs) as datasets.
//
// Accepted: MAGIC_START, one header message, then v1 data messages (MAGIC_DATA)
// until MAGIC_END. Header: the root group's dimensions, attributes and
// variables of the fixed-size types and STRING (enums are read as their
// integer base type). Data messages: raw or deflated (zlib) payloads, any
// number per variable, combined by section with later messages taking
// precedence (ncstream grammar); elements no message covers read as
// _FillValue, else the type's default fill. Header immediate data
// (Variable.data) counts as a first message. STRING variables become char
// arrays with an extra innermost dimension NAME_strlen (the longest UTF-8
// value; shorter values padded with NUL).
// Byte order of a payload: Data.version < 3 -> big-endian whatever `bigend`
// says (every 4.x writer wrote big-endian and TDS 4.6 sends bigend=false, see
// notes 3.5); version >= 3 -> `bigend` if present, else little-endian
// (netcdf-java 5.x decodeDataByteOrder).
//
// Refused with FormatError naming the file and byte offset: a bad magic,
// varints reaching 2^63, lengths past the end of the file, unknown or
// unsupported messages (second header, MAGIC_DATA2, MAGIC_ERR, vlen data,
// strided sections, structures, groups), a missing MAGIC_END (a choice:
// netcdf-java tolerates it, but then a truncated file would read as fill
// values), payload sizes that disagree with their section. Deflated payloads
// are checked when read: they must inflate to exactly uncompressedSize
// bytes (inflation stops there: no decompression bombs), else FormatError.
#pragma once

#include <cstdint>
#include <string>

#include "codecs/dataset.hpp"
#include "io/open_file.hpp"

namespace ncafs::ncstream {

struct ReaderOptions {
    // Inflated payloads kept per opened file; payloads larger than a quarter
    // of this are inflated as a stream on every read instead.
    uint64_t inflate_cache_bytes = uint64_t{64} << 20;
    // STRING variables are held in memory as char arrays up to this size
    // (and at most this / sizeof(std::string) values while reading).
    uint64_t max_string_variable_bytes = uint64_t{256} << 20;
};

Dataset open_ncstream_dataset(const std::string& path, const ReaderOptions& options = {});
// The same for a file already opened (confined, regular).
Dataset open_ncstream_dataset(std::shared_ptr<const OpenFile> file, const ReaderOptions& options = {});

// True when the file starts with MAGIC_START followed by MAGIC_HEADER or
// MAGIC_DATA (netcdf-java NcStreamIosp.isValidFile).
bool has_ncstream_magic(const std::string& path);

}  // namespace ncafs::ncstream
