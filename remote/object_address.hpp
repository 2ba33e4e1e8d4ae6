// Where an object URL is fetched from and how requests to it are signed:
// http(s) URLs as they are; s3://BUCKET/KEY path style under s3_endpoint, or
// virtual-host style on AWS (https://BUCKET.s3.REGION.amazonaws.com/KEY),
// signed by libcurl's SigV4 when credentials are found, else anonymous.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "remote/aws_credentials.hpp"

namespace ncafs::remote {

struct ObjectAddress {
    std::string http_url;              // what libcurl requests
    std::string sigv4;                 // CURLOPT_AWS_SIGV4 ("" = unsigned)
    std::string userpwd;               // KEY:SECRET for SigV4
    std::vector<std::string> headers;  // extra request headers (x-amz-...)
    bool private_ok = false;           // may connect to a loopback/private address (access_policy.hpp)
};

// Throws SourceError(url, reason) for a malformed s3:// or http(s):// URL.
ObjectAddress address_of(const std::string& url, const std::string& s3_endpoint, const std::string& s3_region,
                         const AwsCredentials& credentials);

// "s3", "http" or "https" in lower case; "" when not a remote name.
std::string remote_scheme(std::string_view name);

// Percent-encodes an S3 key for a URL path (unreserved bytes and '/' kept),
// the same encoding SigV4 canonicalises, so the signature matches.
std::string encode_key(std::string_view key);

}  // namespace ncafs::remote
