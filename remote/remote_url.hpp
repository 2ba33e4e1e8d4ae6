// The parts of a remote URL that access decisions compare (access_policy.hpp),
// normalised so that one object has one spelling: http(s) URLs are parsed by
// libcurl's own URL parser (curl_url), the one that sends the request, so
// what is judged is what is fetched; the host is lower case without a
// trailing dot (IPv4 in dotted decimal, as curl normalises "127.1" and
// "0x7f000001"); the path is percent-decoded. A path with a "." or ".."
// segment (literal or encoded), a NUL or a backslash is refused rather than
// normalised: servers disagree on what those mean.
#pragma once

#include <string>

namespace ncafs::remote {

struct UrlParts {
    std::string scheme;  // "http", "https" or "s3"
    std::string host;    // http(s): lower case, IPv6 in brackets; s3: the bucket
    std::string port;    // http(s): decimal (the scheme's default when absent); s3: ""
    std::string path;    // http(s): the decoded path ("/a/b"); s3: the literal key ("a/b")
};

// Throws SourceError(url, reason) for a URL that is not http://, https:// or
// s3://BUCKET/KEY, or that names a user, a zone id, a non-ASCII host or a
// dot segment. `key_optional`: "s3://BUCKET" and "s3://BUCKET/" are
// accepted (for roots).
UrlParts parse_remote_url(const std::string& url, bool key_optional = false);

}  // namespace ncafs::remote
