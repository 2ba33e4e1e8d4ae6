#include "remote/remote_store.hpp"

#include <cstdio>

#include "io/error.hpp"
#include "io/mutex.hpp"
#include "remote/object_address.hpp"
#include "remote/remote_object.hpp"
#include "remote/store_impl.hpp"

namespace ncafs::remote {
namespace {

constexpr size_t kMaxStderrKeys = 1000;

std::string error_kind(const FetchError& e) {
    return e.status() ? "HTTP " + std::to_string(e.status()) : "error " + std::to_string(static_cast<int>(e.kind()));
}

Mutex shared_store_mutex;  // lock order: after DatasetCache::mutex_ (shared()); nothing of ours under it
RemoteConfig shared_config NCAFS_GUARDED_BY(shared_store_mutex);
std::shared_ptr<DiskCache> shared_disk NCAFS_GUARDED_BY(shared_store_mutex);
std::unique_ptr<RemoteStore> shared_store NCAFS_GUARDED_BY(shared_store_mutex);

// The S3 identity and region, read now (before a sandbox closes their files).
void load_credentials(RemoteConfig& config) {
    if (!config.allowed || config.credentials) return;
    config.credentials = find_aws_credentials();
    config.s3_region = find_aws_region(config.s3_region);
}

// The disk cache's lines go to the mount's log, each line its own key (one
// a minute); without a log, DiskCache writes to stderr.
CacheLog cache_log(const RemoteConfig& config) {
    if (!config.log) return {};
    return [log = config.log](const std::string& line) { log("disk cache: " + line, line); };
}

std::shared_ptr<DiskCache> open_disk_cache(const RemoteConfig& config) {
    if (config.cache_dir.empty()) return nullptr;
    return std::make_shared<DiskCache>(config.cache_dir, config.cache_size, cache_log(config));
}

}  // namespace

StoreCore::StoreCore(RemoteConfig c, std::shared_ptr<DiskCache> d)
    : config(std::move(c)), client(config), memory(config.memory_cache_bytes),
      disk(d ? std::move(d) : open_disk_cache(config)), failures(config.failure_memory) {}

void StoreCore::log(const std::string& url, const std::string& kind, const std::string& line) {
    std::string key = kind + " " + url;
    if (config.log) return config.log(key, line);
    MutexLock lock(stderr_mutex_);
    if (stderr_keys_.size() >= kMaxStderrKeys || !stderr_keys_.insert(std::move(key)).second) return;
    std::fprintf(stderr, "ncafs: %s\n", line.c_str());
}

void StoreCore::failed(const std::string& url, const std::string& version, const FetchError& error) {
    if (client.cancelled()) return;
    failures.remember(url, version, error);
    log_failure(url, error);
}

void StoreCore::log_failure(const std::string& url, const FetchError& error) {
    log(url, error_kind(error), "remote: " + url + ": " + error.reason());
}

const AwsCredentials& StoreCore::credentials() {
    std::call_once(credentials_once_,
                   [this] { credentials_ = config.credentials ? *config.credentials : find_aws_credentials(); });
    return credentials_;
}


// One range GET of the first block tells the size (Content-Range) and the
// version (ETag, Last-Modified); the block itself is kept (headers live there).
std::shared_ptr<const RemoteBytes> RemoteStore::Impl::open_online(const std::string& url, ObjectAddress address) {
    auto first = std::make_shared<std::vector<char>>(kFetchBlockSize);
    std::vector<RangeRequest> request{{&address, 0, kFetchBlockSize, "", first->data()}};
    std::vector<RangeResponse> responses;
    fetch_ranges(core->fetch_context(), url, Expected{}, request, &responses);
    const RangeResponse& r = responses.front();
    std::optional<uint64_t> size = revealed_size(r);
    if (!size) throw SourceError(url, "the server did not say the object's size (no Content-Range total)");
    ObjectMeta meta{url, *size, r.etag, r.last_modified};
    if (core->disk) core->disk->store_meta(meta);
    auto object = std::make_shared<RemoteObject>(core, meta, std::move(address));
    first->resize(std::min(kFetchBlockSize, *size));
    if (*size > 0) object->keep_block(0, std::move(first));
    return object;
}

// Unreachable with metadata in the disk cache: the cached version (one
// line); otherwise the error. `fresh`: the failure just happened (logged),
// rather than recalled from the failure memory (already logged).
std::shared_ptr<const RemoteBytes> RemoteStore::Impl::open_offline(const std::string& url, ObjectAddress address,
                                                                   const FetchError& why, bool fresh) {
    std::optional<ObjectMeta> meta = core->disk ? core->disk->load_meta(url) : std::nullopt;
    if (why.kind() != Verdict::Unreachable || !meta) {
        if (fresh) core->log_failure(url, why);
        throw why;
    }
    if (fresh)
        core->log(url, "offline", "remote: " + url + ": server unreachable (" + why.reason() +
                                      "); serving the version in the disk cache (" + version_of(*meta) + ")");
    return std::make_shared<RemoteObject>(core, *meta, std::move(address));
}

RemoteStore::RemoteStore(RemoteConfig config) : RemoteStore(std::move(config), nullptr) {}

RemoteStore::RemoteStore(RemoteConfig config, std::shared_ptr<DiskCache> disk) : impl_(std::make_unique<Impl>()) {
    impl_->core = std::make_shared<StoreCore>(std::move(config), std::move(disk));
}

RemoteStore::~RemoteStore() = default;

RemoteStore& RemoteStore::shared() {
    MutexLock lock(shared_store_mutex);
    if (!shared_store) shared_store.reset(new RemoteStore(shared_config, shared_disk));
    return *shared_store;
}

void RemoteStore::configure_shared(RemoteConfig config) {
    MutexLock lock(shared_store_mutex);
    if (shared_store) throw UsageError("the remote store is configured before its first use");
    shared_disk = open_disk_cache(config);
    shared_config = std::move(config);
    load_credentials(shared_config);
}

void RemoteStore::load_shared_credentials() {
    MutexLock lock(shared_store_mutex);
    if (!shared_store) load_credentials(shared_config);
}

std::shared_ptr<const RemoteBytes> RemoteStore::open(const std::string& url) { return impl_->open(url, false); }

std::shared_ptr<const RemoteBytes> RemoteStore::open_if_present(const std::string& url) {
    return impl_->open(url, true);
}

std::shared_ptr<const RemoteBytes> RemoteStore::Impl::open(const std::string& url, bool absent_ok) {
    constexpr long kNotFound = 404;
    if (!core->config.allowed) throw SourceError(url, "remote partitions are not allowed (-o remote=no)");
    ObjectAddress object_address = address(url);
    // Failed a moment ago: the same answer at once (the disk cache, or the error).
    if (std::optional<FetchError> recent = core->failures.recall(url, "")) {
        if (absent_ok && recent->status() == kNotFound) return nullptr;
        return open_offline(url, std::move(object_address), *recent, false);
    }
    try {
        return open_online(url, object_address);
    } catch (const FetchError& e) {
        if (core->client.cancelled()) throw;
        core->failures.remember(url, "", e);
        if (absent_ok && e.status() == kNotFound) return nullptr;  // absent, not failed: no log line
        return open_offline(url, std::move(object_address), e, true);
    }
}

bool RemoteStore::replaced(const RemoteBytes& object) const {
    std::optional<FetchError> recent = impl_->core->failures.recall(object.url(), object.version());
    return recent && recent->kind() == Verdict::Changed;
}

void RemoteStore::cancel() { impl_->core->client.cancel(); }

void RemoteStore::cancel_shared() {
    MutexLock lock(shared_store_mutex);
    if (shared_store) shared_store->cancel();
}

}  // namespace ncafs::remote
