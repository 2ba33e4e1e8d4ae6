// The -o options of remote partitions (allow_root=URL, remote=, s3_endpoint=,
// s3_region=, ca_file=, cache_dir=, cache_size=, remote_timeout=), shared by
// mount, export, check and inspect: parsing into an agg::RemoteConfig.
// Their --help lines are in options.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "aggregation/read/remote_objects.hpp"

namespace ncafs::fs {

// Applies key=value when key is a remote option; false otherwise. Throws
// UsageError for a bad value.
bool apply_remote_option(const std::string& key, const std::string& value, agg::RemoteConfig& config);

// "512", "64K", "100M", "2G" (powers of 1024) as bytes; throws UsageError
// naming the option for anything else.
uint64_t parse_size(const std::string& text, const std::string& option);

}  // namespace ncafs::fs
