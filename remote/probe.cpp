// RemoteStore::probe: one range GET (open()'s first block), its outcome sorted for `ncafs check`.
#include <vector>

#include "io/error.hpp"
#include "remote/store_impl.hpp"

namespace ncafs::remote {
namespace {

RemoteStore::Status status_of(const FetchError& e) {
    if (e.kind() == Verdict::Unreachable) return RemoteStore::Status::Unreachable;
    if (e.status() == 404) return RemoteStore::Status::Missing;
    if (e.status() == 401 || e.status() == 403) return RemoteStore::Status::Forbidden;
    return RemoteStore::Status::Error;
}

}  // namespace

RemoteStore::Probe RemoteStore::probe(const std::string& url) {
    if (!impl_->core->config.allowed) return {Status::Error, "remote partitions are not allowed (-o remote=no)"};
    StoreCore& core = *impl_->core;
    // A failure is remembered like open()'s, so that the open after the probe does not wait for it again.
    if (std::optional<FetchError> recent = core.failures.recall(url, "")) return {status_of(*recent), recent->what()};
    try {
        ObjectAddress address = impl_->address(url);
        // The same first request as open() makes: some S3-compatible stores
        // (s3rver) answer a one-byte range with the whole object.
        std::vector<char> first(kFetchBlockSize);
        std::vector<RangeRequest> request{{&address, 0, kFetchBlockSize, "", first.data()}};
        std::vector<RangeResponse> responses;
        fetch_ranges(core.fetch_context(), url, Expected{}, request, &responses);  // the caller reports it
        std::optional<uint64_t> size = revealed_size(responses.front());
        return {Status::Ok, "HTTP " + std::to_string(responses.front().status) +
                                (size ? ", " + std::to_string(*size) + " bytes" : std::string())};
    } catch (const FetchError& e) {
        if (!core.client.cancelled()) core.failures.remember(url, "", e);
        return {status_of(e), e.what()};
    } catch (const SourceError& e) {
        return {Status::Error, e.what()};
    }
}

}  // namespace ncafs::remote
