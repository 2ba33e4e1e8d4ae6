// The bytes of a file that is not on a local disk (an object on an HTTP
// server or in an S3 store), as the codecs read them: a fixed size and a
// version seen when it was opened; every read answers from that version
// or throws, never from a mix of two. Implemented by remote/ (libcurl);
// codecs only see this interface, so no format reader knows about HTTP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ncafs {

class RemoteBytes {
public:
    virtual ~RemoteBytes() = default;

    // The URL as given (s3://BUCKET/KEY or http(s)://...), for messages and keys.
    virtual const std::string& url() const = 0;
    virtual uint64_t size() const = 0;
    // Opaque text that changes whenever the object is replaced (ETag,
    // Last-Modified and size together): part of cache keys.
    virtual const std::string& version() const = 0;

    // Exactly n bytes at offset of the version seen at open (If-Match).
    // Throws SourceError(url, reason naming the HTTP status or curl error)
    // when unreachable after retries, refused, short, or changed.
    virtual void read(void* buffer, size_t n, uint64_t offset) const = 0;

    struct Range {
        void* buffer;
        size_t n;
        uint64_t offset;
    };
    // Several ranges of this object; implementations fetch them in parallel
    // and merge nearby ones. Same errors as read().
    virtual void read_many(std::span<const Range> ranges) const {
        for (const Range& r : ranges) read(r.buffer, r.n, r.offset);
    }
};

}  // namespace ncafs
