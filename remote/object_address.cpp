#include "remote/object_address.hpp"

#include <algorithm>
#include <cctype>

#include "io/error.hpp"
#include "io/percent_encode.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::remote {
namespace {

bool all_of_chars(std::string_view s, std::string_view extra) {
    return std::all_of(s.begin(), s.end(), [&](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
    });
}

std::string strip_trailing_slashes(std::string s) {
    while (!s.empty() && s.back() == '/') s.pop_back();
    return s;
}

ObjectAddress s3_address(const std::string& url, const std::string& endpoint, const std::string& configured_region,
                         const AwsCredentials& credentials) {
    std::string_view rest = std::string_view(url).substr(5);  // after "s3://"
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash + 1 == rest.size())
        throw SourceError(url, "an S3 URL is s3://BUCKET/KEY (no key here)");
    std::string_view bucket = rest.substr(0, slash), key = rest.substr(slash + 1);
    if (bucket.size() < 3 || bucket.size() > 63 || !all_of_chars(bucket, ".-_"))
        throw SourceError(url, "not a valid S3 bucket name: '" + std::string(bucket) + "'");
    std::string region = find_aws_region(configured_region);
    if (region.empty() || !all_of_chars(region, "-"))
        throw SourceError(url, "not a valid S3 region: '" + region + "'");

    ObjectAddress a;
    if (!endpoint.empty())
        a.http_url = strip_trailing_slashes(endpoint) + "/" + std::string(bucket) + "/" + encode_key(key);
    else if (bucket.find('.') != std::string_view::npos)  // a dotted host name fails the *.s3 certificate
        a.http_url = "https://s3." + region + ".amazonaws.com/" + std::string(bucket) + "/" + encode_key(key);
    else
        a.http_url = "https://" + std::string(bucket) + ".s3." + region + ".amazonaws.com/" + encode_key(key);
    if (!credentials.access_key.empty()) {
        a.sigv4 = "aws:amz:" + region + ":s3";
        a.userpwd = credentials.access_key + ":" + credentials.secret_key;
        // libcurl 7.88 signs every x-amz-* header we set and takes the
        // payload hash from this one; GETs have no body to sign.
        a.headers.push_back("x-amz-content-sha256: UNSIGNED-PAYLOAD");
        if (!credentials.session_token.empty())
            a.headers.push_back("x-amz-security-token: " + credentials.session_token);
    }
    return a;
}

}  // namespace

std::string remote_scheme(std::string_view name) {
    size_t colon = name.find("://");
    if (colon == std::string_view::npos || colon > 5) return {};
    std::string scheme(name.substr(0, colon));
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return scheme == "s3" || scheme == "http" || scheme == "https" ? scheme : std::string();
}

bool is_remote_url(std::string_view name) { return !remote_scheme(name).empty(); }

// SigV4 canonical URIs encode all but the unreserved characters (and '/').
std::string encode_key(std::string_view key) { return percent_encode(key, "-_.~/"); }

ObjectAddress address_of(const std::string& url, const std::string& s3_endpoint, const std::string& s3_region,
                         const AwsCredentials& credentials) {
    std::string scheme = remote_scheme(url);
    if (scheme.empty()) throw SourceError(url, "not an http://, https:// or s3:// URL");
    if (url.find_first_of("\r\n") != std::string::npos) throw SourceError(url, "a URL cannot contain line breaks");
    // S3 keys are percent-encoded here; an http(s) URL must come encoded.
    if (scheme == "s3") return s3_address(url, s3_endpoint, s3_region, credentials);
    if (url.find_first_of(" \t") != std::string::npos) throw SourceError(url, "an http(s) URL cannot contain blanks");
    return ObjectAddress{url, "", "", {}};
}

}  // namespace ncafs::remote
