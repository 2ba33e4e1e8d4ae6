#include "remote/remote_store.hpp"

#include <cstdio>

#include "codecs/error.hpp"
#include "remote/object_address.hpp"
#include "remote/remote_object.hpp"
#include "remote/store_impl.hpp"

namespace ncafs::remote {
namespace {

LogFunction log_or_stderr(const RemoteConfig& config) {
    if (config.log) return config.log;
    return [](const std::string& line) { std::fprintf(stderr, "ncafs: %s\n", line.c_str()); };
}

std::mutex shared_mutex;
RemoteConfig shared_config;
std::shared_ptr<DiskCache> shared_disk;
std::unique_ptr<RemoteStore> shared_store;

std::shared_ptr<DiskCache> open_disk_cache(const RemoteConfig& config) {
    if (config.cache_dir.empty()) return nullptr;
    return std::make_shared<DiskCache>(config.cache_dir, config.cache_size, log_or_stderr(config));
}

}  // namespace

StoreCore::StoreCore(RemoteConfig c, std::shared_ptr<DiskCache> d)
    : config(std::move(c)), log(log_or_stderr(config)), client(config), memory(config.memory_cache_bytes),
      disk(d ? std::move(d) : open_disk_cache(config)) {}

const AwsCredentials& StoreCore::credentials() {
    std::call_once(credentials_once_, [this] { credentials_ = find_aws_credentials(); });
    return credentials_;
}


// One range GET of the first block tells the size (Content-Range) and the
// version (ETag, Last-Modified); the block itself is kept (headers live there).
std::shared_ptr<const RemoteBytes> RemoteStore::Impl::open_online(const std::string& url, ObjectAddress address) {
    auto first = std::make_shared<std::vector<char>>(kBlockSize);
    std::vector<RangeRequest> request{{&address, 0, kBlockSize, "", first->data()}};
    std::vector<RangeResponse> responses;
    fetch_ranges(core->fetch_context(), url, Expected{}, request, &responses);
    const RangeResponse& r = responses.front();
    std::optional<uint64_t> size = revealed_size(r);
    if (!size) throw SourceError(url, "the server did not say the object's size (no Content-Range total)");
    ObjectMeta meta{url, *size, r.etag, r.last_modified};
    if (core->disk) core->disk->store_meta(meta);
    auto object = std::make_shared<RemoteObject>(core, meta, std::move(address));
    first->resize(std::min(kBlockSize, *size));
    if (*size > 0) object->keep_block(0, std::move(first));
    return object;
}

std::shared_ptr<const RemoteBytes> RemoteStore::Impl::open_offline(const std::string& url, ObjectAddress address,
                                                                   const FetchError& why) {
    std::optional<ObjectMeta> meta = core->disk ? core->disk->load_meta(url) : std::nullopt;
    if (why.kind() != Verdict::Unreachable || !meta) throw why;
    core->log("remote: " + url + ": server unreachable; serving the version in the disk cache (" + version_of(*meta) +
              ")");
    return std::make_shared<RemoteObject>(core, *meta, std::move(address));
}

RemoteStore::RemoteStore(RemoteConfig config) : RemoteStore(std::move(config), nullptr) {}

RemoteStore::RemoteStore(RemoteConfig config, std::shared_ptr<DiskCache> disk) : impl_(std::make_unique<Impl>()) {
    impl_->core = std::make_shared<StoreCore>(std::move(config), std::move(disk));
}

RemoteStore::~RemoteStore() = default;

RemoteStore& RemoteStore::shared() {
    std::lock_guard lock(shared_mutex);
    if (!shared_store) shared_store.reset(new RemoteStore(shared_config, shared_disk));
    return *shared_store;
}

void RemoteStore::configure_shared(RemoteConfig config) {
    std::lock_guard lock(shared_mutex);
    if (shared_store) throw UsageError("the remote store is configured before its first use");
    shared_disk = open_disk_cache(config);
    shared_config = std::move(config);
}

std::shared_ptr<const RemoteBytes> RemoteStore::open(const std::string& url) {
    if (!impl_->core->config.allowed) throw SourceError(url, "remote partitions are not allowed (-o remote=no)");
    ObjectAddress address = impl_->address(url);
    try {
        return impl_->open_online(url, address);
    } catch (const FetchError& e) {
        return impl_->open_offline(url, std::move(address), e);
    }
}

}  // namespace ncafs::remote
