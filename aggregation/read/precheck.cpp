#include "aggregation/read/precheck.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <vector>

#include "codecs/cdf/header_reader.hpp"
#include "codecs/error.hpp"
#include "io/open_file.hpp"
#include "codecs/sniff.hpp"

namespace ncafs::agg {

namespace {

// Attribute names that mark an aggregation variable in every generation of
// the conventions (NCA, CFA-0.4 JSON, CFA-0.5 groups, CFA-0.6, CF-1.13).
constexpr std::array<std::string_view, 7> kMarkers = {"nca_array",       "cfa_array",      "aggregated_data",
                                                      "aggregated_dimensions", "nca_dimensions", "cfa_dimensions",
                                                      "cfa_group"};

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool any_marker(const std::vector<Attribute>& attributes) {
    return std::any_of(attributes.begin(), attributes.end(), [](const Attribute& a) { return is_marker_attribute(a.name); });
}

// A classic header is read with the CDF reader, which checks every count
// against the file. A header it rejects is not an aggregation: netcdf-c must
// never see an inconsistent classic file (a 32-byte file claiming 2^31-1
// variables crashes it), so the file stays a single-file dataset whose views
// report the error.
Precheck precheck_classic(int fd, const std::string& path) {
    int copy = ::dup(fd);
    if (copy < 0) return Precheck::NotAggregation;
    try {
        // Names only: the values (a JSON of a million partitions) are checked present, never read.
        cdf::CdfHeader header = cdf::read_cdf_header(*OpenFile::adopt(copy, path), nullptr, cdf::AttributeValues::Skip);
        if (any_marker(header.attributes)) return Precheck::Maybe;
        for (const auto& v : header.variables)
            if (any_marker(v.attributes)) return Precheck::Maybe;
        return Precheck::NotAggregation;
    } catch (const Error&) {
        return Precheck::NotAggregation;
    }
}

// HDF5 attribute names are stored uncompressed but may lie anywhere: only a
// small file without any marker is certainly not an aggregation.
Precheck precheck_hdf5(int fd) {
    constexpr size_t kScan = 1u << 20;
    std::vector<char> bytes(kScan);
    size_t have = 0;
    while (have < kScan) {
        ssize_t r = ::pread(fd, bytes.data() + have, kScan - have, static_cast<off_t>(have));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        have += static_cast<size_t>(r);
    }
    const auto end = bytes.begin() + static_cast<std::ptrdiff_t>(have);
    for (auto marker : kMarkers)
        if (std::search(bytes.begin(), end, marker.begin(), marker.end()) != end) return Precheck::Maybe;
    return have < kScan ? Precheck::NotAggregation : Precheck::Maybe;
}

}  // namespace

bool has_aggregation_name(const std::string& name) { return ends_with(name, ".nc") || ends_with(name, ".nca"); }

bool is_marker_attribute(std::string_view name) {
    return std::find(kMarkers.begin(), kMarkers.end(), name) != kMarkers.end();
}

Precheck precheck_aggregation(const std::string& path, const ConfinedRoots* within) {
    auto slash = path.rfind('/');
    if (!has_aggregation_name(slash == std::string::npos ? path : path.substr(slash + 1)))
        return Precheck::NotAggregation;
    OpenResult opened = open_regular_file(path, within);
    if (!opened.fd) return Precheck::NotAggregation;  // unreadable: served (and failing) as a real file
    return precheck_opened_file(opened.fd.get(), path);
}

Precheck precheck_opened_file(int fd, const std::string& path) {
    switch (sniff_fd(fd)) {
        case FileFormat::Cdf:
            return precheck_classic(fd, path);
        case FileFormat::Hdf5:
            return precheck_hdf5(fd);
        default:
            return Precheck::NotAggregation;
    }
}

}  // namespace ncafs::agg
