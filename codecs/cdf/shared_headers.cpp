#include "codecs/cdf/shared_headers.hpp"

#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "io/mutex.hpp"

namespace ncafs::cdf {

struct RememberedHeader {
    std::vector<uint8_t> bytes;  // the whole encoded header
    CdfHeader header;            // as parsed (its numrecs unused)
    // The layout last checked for one numrecs (shared_layout).
    Mutex layout_mutex;  // lock order: a leaf
    uint64_t layout_numrecs NCAFS_GUARDED_BY(layout_mutex) = 0;
    uint64_t layout_data_end NCAFS_GUARDED_BY(layout_mutex) = 0;
    std::shared_ptr<const CdfLayout> layout NCAFS_GUARDED_BY(layout_mutex);
};

namespace {

constexpr size_t kRemembered = 8;
constexpr uint64_t kLargestRemembered = 64 * 1024;  // the reader's first read

using Remembered = RememberedHeader;

// Width of the numrecs field after the 4-byte magic: 8 for CDF-5.
size_t numrecs_width(int version) { return version == kData64 ? 8 : 4; }

uint64_t load_be(const uint8_t* p, size_t width) {
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v = (v << 8) | p[i];
    return v;
}

bool same_but_numrecs(std::span<const uint8_t> head, const Remembered& r) {
    const size_t skip = 4 + numrecs_width(r.header.version);
    return head.size() >= r.bytes.size() && std::memcmp(head.data(), r.bytes.data(), 4) == 0 &&
           std::memcmp(head.data() + skip, r.bytes.data() + skip, r.bytes.size() - skip) == 0;
}

// numrecs as the parser takes it; false when the parser would refuse it.
bool take_numrecs(std::span<const uint8_t> head, CdfHeader& h) {
    const size_t width = numrecs_width(h.version);
    const uint64_t raw = load_be(head.data() + 4, width);
    const uint64_t streaming = width == 8 ? UINT64_MAX : 0xFFFFFFFFu;
    h.streaming = raw == streaming;
    if (h.streaming) {
        h.numrecs = 0;
        return true;
    }
    if (width == 8 && raw > uint64_t{INT64_MAX}) return false;  // negative: let the parser say so
    h.numrecs = raw;
    return true;
}

class SharedHeaders {
public:
    std::shared_ptr<Remembered> find(std::span<const uint8_t> head, CdfHeader& out) {
        std::shared_ptr<Remembered> hit;
        {
            MutexLock lock(mutex_);
            for (const auto& r : recent_)
                if (same_but_numrecs(head, *r)) {
                    hit = r;
                    break;
                }
        }
        if (!hit) return nullptr;
        CdfHeader h = hit->header;  // outside the lock: a copy of strings and attributes
        if (!take_numrecs(head, h)) return nullptr;
        out = std::move(h);
        return hit;
    }

    std::shared_ptr<Remembered> remember(std::span<const uint8_t> bytes, const CdfHeader& header) {
        auto r = std::make_shared<Remembered>();
        r->bytes.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header.header_size));
        r->header = header;
        MutexLock lock(mutex_);
        recent_.push_front(r);
        if (recent_.size() > kRemembered) recent_.pop_back();
        return r;
    }

private:
    Mutex mutex_;  // lock order: before RememberedHeader::layout_mutex
    std::deque<std::shared_ptr<Remembered>> recent_ NCAFS_GUARDED_BY(mutex_);  // most recent first
};

SharedHeaders& shared() {
    static SharedHeaders* headers = new SharedHeaders;  // never destroyed: usable from any thread at exit
    return *headers;
}

}  // namespace

std::shared_ptr<RememberedHeader> find_shared_header(std::span<const uint8_t> head, CdfHeader& out) {
    if (head.size() < 12) return nullptr;
    return shared().find(head, out);
}

std::shared_ptr<RememberedHeader> remember_shared_header(std::span<const uint8_t> bytes, const CdfHeader& header) {
    if (header.header_size < 12 || header.header_size > bytes.size() || header.header_size > kLargestRemembered)
        return nullptr;
    return shared().remember(bytes, header);
}

std::shared_ptr<const CdfLayout> shared_layout(RememberedHeader& entry, uint64_t numrecs, uint64_t file_size) {
    MutexLock lock(entry.layout_mutex);
    if (!entry.layout || entry.layout_numrecs != numrecs || file_size < entry.layout_data_end) return nullptr;
    return entry.layout;
}

void remember_layout(RememberedHeader& entry, uint64_t numrecs, uint64_t data_end,
                     std::shared_ptr<const CdfLayout> layout) {
    MutexLock lock(entry.layout_mutex);
    entry.layout_numrecs = numrecs;
    entry.layout_data_end = data_end;
    entry.layout = std::move(layout);
}

}  // namespace ncafs::cdf
