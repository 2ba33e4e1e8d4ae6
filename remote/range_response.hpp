// Judges one range GET's response: exactly the requested bytes of the
// expected version, or why not and whether trying again may help (5xx,
// 429, dropped connections, short or misdescribed bodies) or not (other
// 4xx, a changed object, a server that ignores Range).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "remote/http_client.hpp"

namespace ncafs::remote {

enum class Verdict { Ok, Retry, Fail, Changed, Unreachable };

struct Judgement {
    Verdict verdict;
    std::string reason;  // "HTTP 503", "wrong Content-Range 'bytes 0-9/20' for bytes 0-99", ...
};

struct ContentRange {
    std::optional<uint64_t> first, last;  // absent in "bytes */TOTAL"
    uint64_t total = 0;
};
// Parses "bytes FIRST-LAST/TOTAL" or "bytes */TOTAL"; nullopt when malformed
// (including an unknown total "*" and LAST < FIRST).
std::optional<ContentRange> parse_content_range(const std::string& value);

// What the object must be: its size (nullopt at open, when unknown) and ETag.
struct Expected {
    std::optional<uint64_t> size;
    std::string etag;
};
Judgement judge(const RangeRequest& request, const RangeResponse& response, const Expected& expected);

// The size a successful first response reveals (206 Content-Range total, a
// whole-body 200, or 416 "bytes */0" for an empty object).
std::optional<uint64_t> revealed_size(const RangeResponse& response);

// Connection refused, no DNS answer or a timeout: the server is out of reach.
bool unreachable(const RangeResponse& response);

// The transfer ran out of time (the fetch's deadline or the low-speed limit).
bool timed_out(const RangeResponse& response);

// "HTTP 403 (SignatureDoesNotMatch: The request signature ...)" from an S3 error body.
std::string describe_status(const RangeResponse& response);

}  // namespace ncafs::remote
