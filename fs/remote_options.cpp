#include "fs/remote_options.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "codecs/error.hpp"

namespace ncafs::fs {

uint64_t parse_size(const std::string& text, const std::string& option) {
    const size_t digits = text.find_first_not_of("0123456789");
    const std::string number = text.substr(0, digits), suffix = digits == std::string::npos ? "" : text.substr(digits);
    int shift = -1;
    if (suffix.empty()) shift = 0;
    else if (suffix == "K" || suffix == "k") shift = 10;
    else if (suffix == "M" || suffix == "m") shift = 20;
    else if (suffix == "G" || suffix == "g") shift = 30;
    if (number.empty() || shift < 0)
        throw UsageError("option " + option + ": expected a size such as 512, 64K, 100M or 2G, got '" + text + "'");
    errno = 0;
    const unsigned long long v = std::strtoull(number.c_str(), nullptr, 10);
    if (errno == ERANGE || v > (UINT64_MAX >> shift)) throw UsageError("option " + option + ": value too large");
    return static_cast<uint64_t>(v) << shift;
}

namespace {

std::string absolute_path(const std::string& value, const std::string& option) {
    if (value.empty()) throw UsageError("option " + option + ": expected a path");
    return std::filesystem::absolute(value).lexically_normal().string();  // a daemon changes its folder to /
}

// Whole or decimal seconds (0.5, 30), from 0.1 s to a day.
std::chrono::milliseconds parse_seconds(const std::string& value, const std::string& option) {
    char* end = nullptr;
    errno = 0;
    const double seconds = value.empty() ? -1 : std::strtod(value.c_str(), &end);
    if (errno != 0 || !end || *end != '\0' || !(seconds >= 0.1 && seconds <= 86400))
        throw UsageError("option " + option + ": expected seconds from 0.1 to 86400, got '" + value + "'");
    return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

bool apply_remote_option(const std::string& key, const std::string& value, agg::RemoteConfig& config) {
    if (key == "allow_root" && agg::is_remote_url(value)) {  // a local allow_root=DIR is options.cpp's
        config.access.allow(agg::parse_remote_root(value));
    } else if (key == "remote") {
        if (value != "yes" && value != "no") throw UsageError("option remote: expected yes or no, got '" + value + "'");
        config.allowed = value == "yes";
    } else if (key == "s3_endpoint") {
        if (!agg::is_remote_url(value) || value.rfind("s3:", 0) == 0)
            throw UsageError("option s3_endpoint: expected an http:// or https:// URL, got '" + value + "'");
        config.s3_endpoint = value;
    } else if (key == "s3_region") {
        config.s3_region = value;
    } else if (key == "ca_file") {
        config.ca_file = absolute_path(value, key);
    } else if (key == "cache_dir") {
        config.cache_dir = absolute_path(value, key);
    } else if (key == "cache_size") {
        config.cache_size = parse_size(value, key);
    } else if (key == "remote_timeout") {
        config.timeout = parse_seconds(value, key);
    } else {
        return false;
    }
    return true;
}

}  // namespace ncafs::fs
