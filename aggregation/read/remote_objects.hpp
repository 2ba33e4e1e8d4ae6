// What the layers above aggregation/ set and ask about the remote objects
// (HTTP(S), S3) that aggregations read their partitions from: the -o options
// parsed into a configuration, the test for a URL, and the configuration of
// the process's one store before its first open. fs/ reaches remote/ only
// through here (tests/layering_check.py); these are remote/'s own names
// (remote/remote_store.hpp), offered where the fragments are opened.
#pragma once

#include <string_view>
#include <utility>

#include "remote/network_scope.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

// remote=, allow_root=URL, s3_endpoint=, s3_region=, ca_file=, cache_dir=, cache_size=, remote_timeout=.
using RemoteConfig = remote::RemoteConfig;
// True for http://, https:// and s3:// names.
using remote::is_remote_url;
// allow_root=URL: the prefix remote fragments must lie beneath.
using remote::parse_remote_root;

// The store every remote fragment is read from (remote::RemoteStore::shared),
// configured before its first use: opens and checks cache_dir and reads the
// S3 credentials now (before a sandbox). Throws UsageError for a refused cache_dir.
inline void configure_remote_objects(RemoteConfig config) { remote::RemoteStore::configure_shared(std::move(config)); }
// At unmount: the remote jobs end at once, then their threads.
inline void cancel_remote_requests() { remote::RemoteStore::cancel_shared(); }

// Whether the calling thread may send requests (remote/network_scope.hpp):
// a read tried from the caches alone throws NetworkNeeded where it would.
using remote::NetworkNeeded;
using remote::NetworkScope;

}  // namespace ncafs::agg
