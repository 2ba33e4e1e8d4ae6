// What every object of one RemoteStore shares: the configuration, the HTTP
// client, the block caches and the log. Objects keep it alive (shared_ptr),
// so an object outliving its store still reads correctly.
#pragma once

#include <memory>
#include <mutex>
#include <optional>

#include "remote/aws_credentials.hpp"
#include "remote/block_cache.hpp"
#include "remote/disk_cache.hpp"
#include "remote/http_client.hpp"
#include "remote/range_fetcher.hpp"

namespace ncafs::remote {

// Blocks are the unit of both caches; the first one comes with open().
constexpr uint64_t kBlockSize = 256 * 1024;
constexpr uint64_t kMaxBlocksPerRequest = 32;  // 8 MiB per range GET
constexpr unsigned kMaxReadaheadBlocks = 8;

struct StoreCore {
    // `disk`: cache_dir already opened (configure_shared), else opened here.
    StoreCore(RemoteConfig c, std::shared_ptr<DiskCache> disk);

    RemoteConfig config;
    LogFunction log;
    HttpClient client;
    BlockCache memory;
    std::shared_ptr<DiskCache> disk;

    FetchContext fetch_context() { return FetchContext{client, config, log}; }
    const AwsCredentials& credentials();

private:
    std::once_flag credentials_once_;
    AwsCredentials credentials_;
};

}  // namespace ncafs::remote
