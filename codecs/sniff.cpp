#include "codecs/sniff.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "codecs/ds/ds_reader.hpp"
#include "io/open_file.hpp"

namespace ncafs {

namespace {

bool bytes_at(std::span<const uint8_t> b, size_t at, const char* magic, size_t n) {
    return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

bool has_hdf5_signature(std::span<const uint8_t> b) {
    for (size_t at : {size_t{0}, size_t{512}, size_t{1024}, size_t{2048}})
        if (bytes_at(b, at, "\x89HDF\r\n\x1a\n", 8)) return true;
    return false;
}

}  // namespace

FileFormat sniff_format(std::span<const uint8_t> b) {
    if (b.size() >= 4 && bytes_at(b, 0, "CDF", 3) && (b[3] == 1 || b[3] == 2 || b[3] == 5)) return FileFormat::Cdf;
    // ncstream: MAGIC_START "CDFS" then MAGIC_HEADER or MAGIC_DATA (netcdf-java
    // NcStreamIosp.isValidFile).
    if (bytes_at(b, 0, "CDFS\xad\xec\xce\xda", 8) || bytes_at(b, 0, "CDFS\xab\xec\xce\xba", 8))
        return FileFormat::Ncstream;
    if (bytes_at(b, 0, "HueDataStore", 12)) return FileFormat::Vds;
    if (ds::has_ds_signature(b)) return FileFormat::Ds;
    if (has_hdf5_signature(b)) return FileFormat::Hdf5;
    return FileFormat::None;
}

FileFormat sniff_fd(int fd) {
    uint8_t b[kSniffBytes] = {};
    ssize_t n;
    do n = ::pread(fd, b, sizeof b, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return FileFormat::None;
    return sniff_format(std::span<const uint8_t>(b, static_cast<size_t>(n)));
}

FileFormat sniff_file(const OpenFile& file) {
    if (!file.is_remote()) return sniff_fd(file.fd());
    uint8_t b[kSniffBytes] = {};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(file.size(), kSniffBytes));
    file.pread_unchecked(b, n, 0);
    return sniff_format(std::span<const uint8_t>(b, n));
}

}  // namespace ncafs
