#include "remote/range_response.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>

namespace ncafs::remote {
namespace {

std::optional<uint64_t> parse_number(std::string_view s) {
    uint64_t v = 0;
    if (s.empty()) return std::nullopt;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::string xml_element(const std::string& body, const std::string& name) {
    size_t b = body.find("<" + name + ">");
    if (b == std::string::npos) return {};
    b += name.size() + 2;
    size_t e = body.find("</" + name + ">", b);
    return e == std::string::npos ? std::string() : body.substr(b, std::min<size_t>(e - b, 200));
}

bool transient_curl_error(int code) {
    switch (code) {
    case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT: case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2: case CURLE_HTTP2_STREAM: case CURLE_SSL_CONNECT_ERROR:
        return true;
    default:
        return false;
    }
}


std::string requested(const RangeRequest& q) {
    return "bytes " + std::to_string(q.offset) + "-" + std::to_string(q.offset + q.length - 1);
}

Judgement judge_partial(const RangeRequest& q, const RangeResponse& r, const Expected& expected) {
    std::optional<ContentRange> cr = parse_content_range(r.content_range);
    // At open the size is unknown: a first request past the end of a small
    // object rightly gets the bytes up to its end.
    uint64_t end = q.offset + q.length;
    if (!expected.size && cr) end = std::min(end, cr->total);
    if (!cr || !cr->first || *cr->first != q.offset || *cr->last + 1 != end ||
        (expected.size && cr->total != *expected.size))
        return {Verdict::Retry, "wrong Content-Range '" + r.content_range + "' for " + requested(q)};
    if (r.received != end - q.offset)
        return {Verdict::Retry, "short body: " + std::to_string(r.received) + " of " + std::to_string(end - q.offset) +
                                    " bytes for " + requested(q)};
    return {Verdict::Ok, ""};
}

// A 200 carries the whole object: right only when that is what was asked
// (at open, any object no longer than the first request).
Judgement judge_whole(const RangeRequest& q, const RangeResponse& r, const Expected& expected) {
    bool whole = q.offset == 0 && (expected.size ? *expected.size == q.length : r.received <= q.length);
    if (!whole || r.overflow) return {Verdict::Fail, "the server ignores byte ranges (HTTP 200 with the whole object)"};
    if (r.content_length >= 0 && static_cast<uint64_t>(r.content_length) != r.received)
        return {Verdict::Retry, "short body: " + std::to_string(r.received) + " of " +
                                    std::to_string(r.content_length) + " bytes"};
    return {Verdict::Ok, ""};
}

}  // namespace

std::optional<ContentRange> parse_content_range(const std::string& value) {
    std::string_view v = value;
    if (v.rfind("bytes ", 0) != 0) return std::nullopt;
    v.remove_prefix(6);
    size_t slash = v.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    std::optional<uint64_t> total = parse_number(v.substr(slash + 1));
    if (!total) return std::nullopt;
    ContentRange cr;
    cr.total = *total;
    std::string_view span = v.substr(0, slash);
    if (span == "*") return cr;
    size_t dash = span.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    cr.first = parse_number(span.substr(0, dash));
    cr.last = parse_number(span.substr(dash + 1));
    if (!cr.first || !cr.last || *cr.last < *cr.first || *cr.last >= cr.total) return std::nullopt;
    return cr;
}

std::string describe_status(const RangeResponse& r) {
    std::string text = "HTTP " + std::to_string(r.status);
    std::string code = xml_element(r.error_body, "Code");
    if (!code.empty()) {
        std::string message = xml_element(r.error_body, "Message");
        text += " (" + code + (message.empty() ? "" : ": " + message) + ")";
    }
    return text;
}

Judgement judge(const RangeRequest& q, const RangeResponse& r, const Expected& expected) {
    if (r.status == 200 && (r.overflow || r.curl_code == CURLE_OK)) return judge_whole(q, r, expected);
    if (r.curl_code != CURLE_OK) {
        Verdict v = transient_curl_error(r.curl_code) ? Verdict::Retry
                    : unreachable(r) ? Verdict::Unreachable : Verdict::Fail;
        if (r.overflow) v = Verdict::Retry;
        return {v, r.overflow ? "body longer than the " + requested(q) + " asked for" : r.curl_error};
    }
    if (r.status == 412) return {Verdict::Changed, "changed on the server (HTTP 412 Precondition Failed)"};
    if (!expected.etag.empty() && !r.etag.empty() && r.etag != expected.etag && r.status / 100 == 2)
        return {Verdict::Changed, "changed on the server (ETag " + r.etag + ", opened as " + expected.etag + ")"};
    if (r.status == 429 || r.status / 100 == 5) return {Verdict::Retry, describe_status(r)};
    if (r.status == 416 && q.offset == 0 && revealed_size(r) == uint64_t{0}) return {Verdict::Ok, ""};
    if (r.status == 206) return judge_partial(q, r, expected);
    return {Verdict::Fail, describe_status(r)};
}

bool unreachable(const RangeResponse& r) {
    int c = r.curl_code;
    return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_RESOLVE_PROXY || c == CURLE_COULDNT_CONNECT ||
           c == CURLE_OPERATION_TIMEDOUT;
}

bool timed_out(const RangeResponse& r) { return r.curl_code == CURLE_OPERATION_TIMEDOUT; }

std::optional<uint64_t> revealed_size(const RangeResponse& r) {
    if (r.status == 200) return r.received;
    std::optional<ContentRange> cr = parse_content_range(r.content_range);
    if (!cr) return std::nullopt;
    if (r.status == 416) return cr->first ? std::nullopt : std::optional<uint64_t>(cr->total);
    return cr->total;
}

}  // namespace ncafs::remote
