#include "remote/remote_url.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "io/error.hpp"
#include "remote/object_address.hpp"

namespace ncafs::remote {
namespace {

struct UrlDeleter {
    void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

// One part of a parsed URL ("" when absent).
std::string url_part(CURLU* u, CURLUPart part, unsigned flags = 0) {
    char* text = nullptr;
    if (curl_url_get(u, part, &text, flags) != CURLUE_OK || !text) return {};
    std::string s(text);
    curl_free(text);
    return s;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// %XX -> byte; a '%' not followed by two hex digits stays (servers keep it too).
std::string percent_decoded(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        int hi = i + 2 < s.size() && s[i] == '%' ? hex_value(s[i + 1]) : -1;
        int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
        if (hi >= 0 && lo >= 0) {
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

// Throws when a '/'-separated segment is "." or ".." (or "..;x", which some
// servers read as ".."), or the path holds a NUL or a backslash.
void refuse_dot_segments(const std::string& url, const std::string& path) {
    if (path.find('\0') != std::string::npos || path.find('\\') != std::string::npos)
        throw SourceError(url, "a remote path cannot contain a NUL or a backslash");
    size_t begin = 0;
    while (begin <= path.size()) {
        size_t end = std::min(path.find('/', begin), path.size());
        std::string segment = path.substr(begin, end - begin);
        std::string before_params = segment.substr(0, segment.find(';'));
        if (before_params == "." || before_params == "..")
            throw SourceError(url, "a remote path cannot contain a \".\" or \"..\" segment (also percent-encoded)");
        begin = end + 1;
    }
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

UrlParts parse_http(const std::string& url) {
    UrlHandle u(curl_url());
    if (!u) throw SourceError(url, "out of memory parsing the URL");
    CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, url.c_str(), CURLU_PATH_AS_IS);
    if (rc != CURLUE_OK) throw SourceError(url, std::string("not a valid URL: ") + curl_url_strerror(rc));
    if (!url_part(u.get(), CURLUPART_USER).empty() || !url_part(u.get(), CURLUPART_PASSWORD).empty())
        throw SourceError(url, "a remote URL cannot name a user or password");
    if (!url_part(u.get(), CURLUPART_ZONEID).empty()) throw SourceError(url, "a remote URL cannot name an IPv6 zone");
    UrlParts p{lower(url_part(u.get(), CURLUPART_SCHEME)), lower(url_part(u.get(), CURLUPART_HOST)),
               url_part(u.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT), percent_decoded(url_part(u.get(), CURLUPART_PATH))};
    if (std::any_of(p.host.begin(), p.host.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
        throw SourceError(url, "a remote host name must be ASCII (punycode)");
    if (!p.host.empty() && p.host.back() == '.') p.host.pop_back();
    if (p.host.empty()) throw SourceError(url, "a remote URL needs a host");
    refuse_dot_segments(url, p.path);
    return p;
}

UrlParts parse_s3(const std::string& url, bool key_optional) {
    const std::string rest = url.substr(5);  // after "s3://"
    const size_t slash = rest.find('/');
    UrlParts p{"s3", rest.substr(0, slash), "", slash == std::string::npos ? "" : rest.substr(slash + 1)};
    if (p.path.empty() && !key_optional) throw SourceError(url, "an S3 URL is s3://BUCKET/KEY (no key here)");
    if (p.host.empty()) throw SourceError(url, "an S3 URL names a bucket: s3://BUCKET/KEY");
    refuse_dot_segments(url, p.path);  // path-style URLs would climb out of the bucket
    return p;
}

}  // namespace

UrlParts parse_remote_url(const std::string& url, bool key_optional) {
    const std::string scheme = remote_scheme(url);
    if (scheme.empty()) throw SourceError(url, "not an http://, https:// or s3:// URL");
    return scheme == "s3" ? parse_s3(url, key_optional) : parse_http(url);
}

}  // namespace ncafs::remote
