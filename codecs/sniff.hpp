// The one place that tells a file's format from its first bytes: CDF-1/2/5,
// HDF5 (its signature at 0, or after a user block of 512, 1024 or 2048
// bytes, as netcdf-c finds it), ds, ncstream and OpenVDS containers. Every
// layer asks here; the readers then check the whole file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ncafs {

enum class FileFormat {
    None,      // none of the formats below
    Cdf,       // 'C' 'D' 'F' then version 1, 2 or 5
    Hdf5,      // HDF5 signature (netCDF-4)
    Ds,        // ds-1.0 ("ds-" or a JSON object)
    Ncstream,  // ncstream MAGIC_START then a header or data message
    Vds,       // OpenVDS container ("HueDataStore")
};

// Bytes sniff_format needs to see every signature (the last HDF5 place + 8).
inline constexpr size_t kSniffBytes = 2048 + 8;

// Decides from the first bytes alone; a shorter span only hides the formats
// whose signature lies beyond it.
FileFormat sniff_format(std::span<const uint8_t> first_bytes);

// sniff_format of the first kSniffBytes of an open file (one pread);
// None when the read fails.
FileFormat sniff_fd(int fd);

class OpenFile;
// sniff_fd for a local file; for a remote one, its first kSniffBytes (or
// fewer) by range, throwing SourceError (naming the URL) when that fails.
FileFormat sniff_file(const OpenFile& file);

// CDF or HDF5: what netcdf-c (or our CDF reader) opens as netCDF.
inline bool is_netcdf_format(FileFormat f) { return f == FileFormat::Cdf || f == FileFormat::Hdf5; }

}  // namespace ncafs
