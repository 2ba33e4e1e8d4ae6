// AWS identity for s3:// objects, found the way the AWS tools find it:
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the
// shared credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials)
// section AWS_PROFILE ("default"), else none (anonymous requests). The
// region: the given one, else AWS_REGION / AWS_DEFAULT_REGION / the
// profile's region in ~/.aws/config (AWS_CONFIG_FILE), else us-east-1.
#pragma once

#include <string>

namespace ncafs::remote {

struct AwsCredentials {
    std::string access_key;  // "" = anonymous
    std::string secret_key;
    std::string session_token;
    std::string source;  // "environment", "FILE [profile]" or "none": for messages
};

AwsCredentials find_aws_credentials();
std::string find_aws_region(const std::string& configured);

// The value of KEY in section [SECTION] of an INI file ("" if absent or
// unreadable). Sections of ~/.aws/config other than default are spelled
// "profile NAME": callers pass the exact section name.
std::string ini_value(const std::string& path, const std::string& section, const std::string& key);

}  // namespace ncafs::remote
