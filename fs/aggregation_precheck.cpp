#include "fs/aggregation_precheck.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace ncafs::fs {

namespace {

// Attribute names that mark an aggregation variable in every generation of
// the conventions (NCA, CFA-0.4 JSON, CFA-0.5 groups, CFA-0.6, CF-1.13).
constexpr std::array<std::string_view, 7> kMarkers = {"nca_array",       "cfa_array",      "aggregated_data",
                                                      "aggregated_dimensions", "nca_dimensions", "cfa_dimensions",
                                                      "cfa_group"};

bool is_marker(std::string_view name) {
    return std::find(kMarkers.begin(), kMarkers.end(), name) != kMarkers.end();
}

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A growing prefix of a file, read on demand up to a cap, so that a header
// walk never reads more than the header.
class Prefix {
public:
    Prefix(int fd, size_t cap) : fd_(fd), cap_(cap) {}
    // Makes bytes [0, end) available; false when the file (or the cap) ends first.
    bool ensure(uint64_t end) {
        if (end <= bytes_.size()) return true;
        if (end > cap_) capped_ = true;
        if (end > cap_ || eof_) return false;
        size_t want = std::min<size_t>(cap_, std::max<size_t>(end, bytes_.size() * 2 + 4096));
        size_t have = bytes_.size();
        bytes_.resize(want);
        while (have < want) {
            ssize_t r = ::pread(fd_, bytes_.data() + have, want - have, static_cast<off_t>(have));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                eof_ = true;
                break;
            }
            have += static_cast<size_t>(r);
        }
        bytes_.resize(have);
        return end <= bytes_.size();
    }
    const uint8_t* data() const { return bytes_.data(); }
    size_t size() const { return bytes_.size(); }
    bool capped() const { return capped_; }  // a read stopped at the cap, not at the file's end

private:
    int fd_;
    size_t cap_;
    bool eof_ = false;
    bool capped_ = false;
    std::vector<uint8_t> bytes_;
};

// Walks a CDF-1/2/5 header and looks at every attribute name. A header it
// cannot walk is not an aggregation: netcdf-c must never see a classic file
// whose header is inconsistent (a 32-byte file claiming 2^31-1 variables
// crashes it), so the file stays a plain dataset whose views report the error.
// Only a header longer than the read cap is left to the full test.
class ClassicHeaderWalk {
public:
    ClassicHeaderWalk(Prefix& prefix, int version) : p_(prefix), wide_(version == 5), wide_offset_(version != 1) {}

    Precheck run() {
        pos_ = 4;
        uint64_t ignored = 0;
        if (!count(ignored)) return unwalkable();  // numrecs
        bool marker = false;
        // dim_list
        uint64_t tag = 0, n = 0;
        if (!list_header(tag, n)) return unwalkable();
        for (uint64_t i = 0; i < n; ++i) {
            std::string_view name;
            if (!read_name(name) || !count(ignored)) return unwalkable();
        }
        if (!attributes(marker)) return unwalkable();
        if (!list_header(tag, n)) return unwalkable();
        for (uint64_t i = 0; i < n; ++i) {
            std::string_view name;
            uint64_t ndims = 0;
            if (!read_name(name) || !count(ndims) || ndims > kMaxCount) return unwalkable();
            if (!skip(ndims * (wide_ ? 8 : 4))) return unwalkable();
            if (!attributes(marker)) return unwalkable();
            if (!skip(4) || !count(ignored) || !skip(wide_offset_ ? 8 : 4)) return unwalkable();
        }
        return marker ? Precheck::Maybe : Precheck::NotAggregation;
    }

private:
    static constexpr uint64_t kMaxCount = 1u << 24;

    // A header longer than the cap (a huge JSON attribute) may still be an
    // aggregation: the full test reads it with ncafs's own header reader first.
    Precheck unwalkable() const { return p_.capped() ? Precheck::Maybe : Precheck::NotAggregation; }

    bool u32(uint32_t& v) {
        if (!p_.ensure(pos_ + 4)) return false;
        const uint8_t* b = p_.data() + pos_;
        v = (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
        pos_ += 4;
        return true;
    }
    bool count(uint64_t& v) {
        if (!wide_) {
            uint32_t x = 0;
            if (!u32(x)) return false;
            v = x;
            return true;
        }
        uint32_t hi = 0, lo = 0;
        if (!u32(hi) || !u32(lo)) return false;
        v = (uint64_t(hi) << 32) | lo;
        return true;
    }
    bool skip(uint64_t n) {
        if (n > (uint64_t(1) << 40)) return false;
        pos_ += n;
        return p_.ensure(pos_);
    }
    bool list_header(uint64_t& tag, uint64_t& n) {
        uint32_t t = 0;
        if (!u32(t) || !count(n)) return false;
        tag = t;
        return n <= kMaxCount && (tag != 0 || n == 0);
    }
    bool read_name(std::string_view& name) {
        uint64_t len = 0;
        if (!count(len) || len > 65536) return false;
        if (!p_.ensure(pos_ + len)) return false;
        name = std::string_view(reinterpret_cast<const char*>(p_.data() + pos_), len);
        return skip((len + 3) / 4 * 4);
    }
    bool attributes(bool& marker) {
        uint64_t tag = 0, n = 0;
        if (!list_header(tag, n)) return false;
        for (uint64_t i = 0; i < n; ++i) {
            std::string_view name;
            if (!read_name(name)) return false;
            // name may be invalidated by the next ensure(): test it now.
            if (is_marker(name)) marker = true;
            uint32_t type = 0;
            uint64_t nelems = 0;
            if (!u32(type) || !count(nelems)) return false;
            static constexpr uint64_t sizes[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
            if (type < 1 || type > 11 || nelems > (uint64_t(1) << 36)) return false;
            if (!skip((nelems * sizes[type] + 3) / 4 * 4)) return false;
        }
        return true;
    }

    Prefix& p_;
    bool wide_;
    bool wide_offset_;
    uint64_t pos_ = 0;
};

bool contains(const uint8_t* data, size_t n, std::string_view needle) {
    return std::search(data, data + n, needle.begin(), needle.end()) != data + n;
}

}  // namespace

bool has_aggregation_name(const std::string& name) { return ends_with(name, ".nc") || ends_with(name, ".nca"); }

Precheck precheck_aggregation(const std::string& path, const ConfinedRoots* within) {
    auto slash = path.rfind('/');
    if (!has_aggregation_name(slash == std::string::npos ? path : path.substr(slash + 1)))
        return Precheck::NotAggregation;
    OpenResult fd = open_regular_file(path, within);
    if (!fd.fd) return Precheck::NotAggregation;  // unreadable: served (and failing) as a plain file
    constexpr size_t kHeaderCap = 64u << 20;
    Prefix prefix(fd.fd.get(), kHeaderCap);
    if (!prefix.ensure(8)) return Precheck::NotAggregation;
    const uint8_t* m = prefix.data();
    if (m[0] == 'C' && m[1] == 'D' && m[2] == 'F' && (m[3] == 1 || m[3] == 2 || m[3] == 5))
        return ClassicHeaderWalk(prefix, m[3]).run();
    static constexpr uint8_t hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (std::memcmp(m, hdf5, 8) != 0) return Precheck::NotAggregation;
    // HDF5 attribute names are stored uncompressed but may lie anywhere: only
    // a small file without any marker is certainly not an aggregation.
    constexpr size_t kScan = 1u << 20;
    prefix.ensure(kScan);
    size_t n = std::min(prefix.size(), kScan);
    bool whole = prefix.size() < kScan;
    for (auto marker : kMarkers)
        if (contains(prefix.data(), n, marker)) return Precheck::Maybe;
    return whole ? Precheck::NotAggregation : Precheck::Maybe;
}

}  // namespace ncafs::fs
