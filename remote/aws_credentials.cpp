#include "remote/aws_credentials.hpp"

#include <cstdlib>
#include <fstream>

namespace ncafs::remote {
namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

std::string trim(const std::string& s) {
    const char* blanks = " \t\r\n";
    size_t b = s.find_first_not_of(blanks);
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(blanks);
    return s.substr(b, e - b + 1);
}

std::string home_file(const char* override_var, const char* relative) {
    std::string path = env(override_var);
    if (!path.empty()) return path;
    std::string home = env("HOME");
    return home.empty() ? std::string() : home + "/" + relative;
}

std::string profile_name() {
    std::string p = env("AWS_PROFILE");
    return p.empty() ? "default" : p;
}

}  // namespace

std::string ini_value(const std::string& path, const std::string& section, const std::string& key) {
    if (path.empty()) return {};
    std::ifstream in(path);
    std::string line, current;
    while (std::getline(in, line)) {
        line = trim(line);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            current = trim(line.substr(1, line.size() - 2));
            continue;
        }
        size_t eq = line.find('=');
        if (current == section && eq != std::string::npos && trim(line.substr(0, eq)) == key)
            return trim(line.substr(eq + 1));
    }
    return {};
}

AwsCredentials find_aws_credentials() {
    AwsCredentials c;
    c.access_key = env("AWS_ACCESS_KEY_ID");
    c.secret_key = env("AWS_SECRET_ACCESS_KEY");
    if (!c.access_key.empty() && !c.secret_key.empty()) {
        c.session_token = env("AWS_SESSION_TOKEN");
        c.source = "environment";
        return c;
    }
    std::string file = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
    std::string profile = profile_name();
    c.access_key = ini_value(file, profile, "aws_access_key_id");
    c.secret_key = ini_value(file, profile, "aws_secret_access_key");
    if (!c.access_key.empty() && !c.secret_key.empty()) {
        c.session_token = ini_value(file, profile, "aws_session_token");
        c.source = file + " [" + profile + "]";
        return c;
    }
    return AwsCredentials{"", "", "", "none"};
}

std::string find_aws_region(const std::string& configured) {
    if (!configured.empty()) return configured;
    for (const char* var : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
        std::string v = env(var);
        if (!v.empty()) return v;
    }
    std::string profile = profile_name();
    std::string section = profile == "default" ? profile : "profile " + profile;
    std::string region = ini_value(home_file("AWS_CONFIG_FILE", ".aws/config"), section, "region");
    return region.empty() ? "us-east-1" : region;
}

}  // namespace ncafs::remote
