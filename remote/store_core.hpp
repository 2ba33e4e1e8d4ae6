// What every object of one RemoteStore shares: the configuration, the HTTP
// client, the block caches, the failures remembered and the log. Objects keep it alive (shared_ptr),
// so an object outliving its store still reads correctly.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "remote/aws_credentials.hpp"
#include "remote/remote_block_cache.hpp"
#include "remote/disk_cache.hpp"
#include "remote/failure_memory.hpp"
#include "remote/http_client.hpp"
#include "remote/range_fetcher.hpp"
#include "io/mutex.hpp"

namespace ncafs::remote {

// Fetch blocks (a range GET asks for whole ones) are the unit of both caches;
// the first one comes with open().
constexpr uint64_t kFetchBlockSize = 256 * 1024;
constexpr uint64_t kMaxBlocksPerRequest = 32;  // 8 MiB per range GET
constexpr unsigned kMaxReadaheadBlocks = 8;

struct StoreCore {
    // `disk`: cache_dir already opened (configure_shared), else opened here.
    StoreCore(RemoteConfig c, std::shared_ptr<DiskCache> disk);

    RemoteConfig config;
    HttpClient client;
    RemoteBlockCache memory;
    std::shared_ptr<DiskCache> disk;
    FailureMemory failures;

    FetchContext fetch_context() { return FetchContext{client, config}; }
    const AwsCredentials& credentials();

    // One log line; `kind` ("HTTP 503", "offline", ...) with the URL is the
    // key the mount's log keeps one line a minute of.
    void log(const std::string& url, const std::string& kind, const std::string& line);
    // A fetch of url at version (or "" at open) failed: remembered (not when
    // the mount is stopping) and logged.
    void failed(const std::string& url, const std::string& version, const FetchError& error);
    void log_failure(const std::string& url, const FetchError& error);

private:
    std::once_flag credentials_once_;
    AwsCredentials credentials_;
    Mutex stderr_mutex_;  // lock order: a leaf
    std::set<std::string> stderr_keys_ NCAFS_GUARDED_BY(stderr_mutex_);  // without config.log: each key once on stderr
};

}  // namespace ncafs::remote
