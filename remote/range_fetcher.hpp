// Fetches byte ranges of one object exactly, in parallel, retrying what may
// succeed on a second try (backoff.hpp) and throwing FetchError otherwise.
// Every fetch ends within the configured timeout (remote_timeout=): each
// attempt gets what is left of it, and no retry starts past it. Logs
// nothing: the caller decides what one failure is worth (store_core.hpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "remote/http_client.hpp"
#include "remote/range_response.hpp"

namespace ncafs::remote {

// A SourceError that also says what kind of failure it was (for probe and
// for the offline fallback at open).
class FetchError : public SourceError {
public:
    FetchError(const std::string& url, const std::string& reason, Verdict kind, long status)
        : SourceError(url, reason), kind_(kind), status_(status), reason_(reason) {}
    Verdict kind() const { return kind_; }
    long status() const { return status_; }
    const std::string& reason() const { return reason_; }

private:
    Verdict kind_;
    long status_;
    std::string reason_;
};

struct FetchContext {
    HttpClient& client;
    const RemoteConfig& config;
};

// Every request must name the same object (url is for messages). Throws
// NetworkNeeded (network_scope.hpp) where the thread may not send any. On
// success each destination holds its bytes; responses (when given) hold the
// last response of each request (for the ETag and size seen at open).
void fetch_ranges(const FetchContext& context, const std::string& url, const Expected& expected,
                  const std::vector<RangeRequest>& requests, std::vector<RangeResponse>* responses = nullptr);

}  // namespace ncafs::remote
