// Objects on HTTP(S) servers and S3
// stores, opened by URL, read by byte range through libcurl. Layering:
// fs -> aggregation -> remote -> codecs. One RemoteStore per process
// (shared()), configured once from the mount options before the first open.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/remote_bytes.hpp"
#include "remote/aws_credentials.hpp"
#include "remote/access_policy.hpp"

namespace ncafs {
class OpenFile;
}

namespace ncafs::remote {

class DiskCache;

struct RemoteConfig {
    bool allowed = true;           // -o remote=no: every open throws SourceError
    AccessPolicy access;           // -o allow_root=URL (repeatable) and allow_other
    std::string s3_endpoint;       // -o s3_endpoint=URL ("" = AWS, virtual-host style)
    std::string s3_region;         // -o s3_region= ("" = AWS_REGION / profile / us-east-1)
    std::string ca_file;           // -o ca_file=
    std::string cache_dir;         // -o cache_dir= ("" = no disk cache)
    // S3 identity; configure_shared reads it (and resolves s3_region) before
    // the sandbox, which then leaves the AWS files closed. Unset: read at the
    // first S3 request (stores made directly, tests).
    std::optional<AwsCredentials> credentials;
    uint64_t cache_size = 0;       // -o cache_size= (bytes) for cache_dir; 0 = 1 GiB
    uint64_t memory_cache_bytes = 256ull << 20;  // in-memory block cache bound
    std::chrono::milliseconds connect_timeout{10000};
    std::chrono::seconds low_speed_time{30};     // abort below 1 KiB/s for this long
    unsigned max_retries = 5;                    // 5xx, 429, dropped connections
    std::chrono::milliseconds retry_budget{60000};
    // -o remote_timeout=: the total time one fetch may take, its retries and
    // their waits included (each attempt gets what is left of it).
    std::chrono::milliseconds timeout{30000};
    // How long a failed fetch of one object (URL and version) is remembered:
    // reads of it meanwhile fail at once with the same error, unsent.
    std::chrono::milliseconds failure_memory{10000};
    // One line per failed object and per offline open (remote/ does not
    // depend on fs/: the mount passes fs::log_rate_limited here). `key`
    // names the URL and the kind of error: a log may keep one line per key
    // and minute. Empty = stderr.
    std::function<void(const std::string& key, const std::string& line)> log;
};

// True for http://, https:// and s3:// names (case-insensitive scheme).
bool is_remote_url(std::string_view name);

class RemoteStore {
public:
    // Opens cache_dir (when set) at once: throws UsageError("cache_dir DIR:
    // REASON") when another user owns it or may write into it.
    explicit RemoteStore(RemoteConfig config);
    ~RemoteStore();
    static RemoteStore& shared();
    // Before the first shared() use; opens and checks cache_dir now (the
    // same UsageError), so that a refused cache stops a mount before it
    // starts, and reads the S3 credentials and region now (before the sandbox).
    static void configure_shared(RemoteConfig config);
    // Reads the S3 credentials and region for the shared store now, unless
    // they are (configure_shared did) or the store is in use: before a
    // sandbox that leaves their files closed (inspect configures nothing).
    static void load_shared_credentials();

    // Finds the object's size and version (HEAD, or a first range GET whose
    // Content-Range gives the size). Throws SourceError(url, reason).
    std::shared_ptr<const RemoteBytes> open(const std::string& url);
    // open(), but null when the server answers 404 (an object that may be
    // absent: a Zarr chunk that reads as the fill value). The 404 is
    // remembered like a failure (failure_memory) and not logged.
    std::shared_ptr<const RemoteBytes> open_if_present(const std::string& url);

    // The whole object as a local file in cache_dir (for netCDF-4 objects,
    // which netcdf-c cannot read by range here), open: read it through its
    // fd (proc_path()), its name is for messages. Fetched once per version.
    // Throws SourceError when there is no cache_dir or the object is larger
    // than cache_size.
    std::shared_ptr<const OpenFile> local_copy(const RemoteBytes& object);

    // For `ncafs check`: what became of one fragment's URL.
    enum class Status { Ok, Missing, Forbidden, Unreachable, Error };
    struct Probe {
        Status status;
        std::string detail;  // "HTTP 403", "Could not resolve host", ...
    };
    Probe probe(const std::string& url);

    // True when a read of this version of the object found it replaced on
    // the server (HTTP 412, another ETag) a moment ago: open its URL again.
    bool replaced(const RemoteBytes& object) const;

    // Ends every transfer under way and every wait between retries at once
    // (their reads fail); later fetches fail at once too. For a mount
    // stopping: no request outlives it by more than a moment.
    void cancel();
    // cancel() of the shared store, when there is one.
    static void cancel_shared();

private:
    RemoteStore(RemoteConfig config, std::shared_ptr<DiskCache> disk);
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ncafs::remote
