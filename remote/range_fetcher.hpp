// Fetches byte ranges of one object exactly, in parallel, retrying what may
// succeed on a second try (backoff.hpp) and throwing FetchError otherwise.
// Logs one line per failed fetch through the store's log function.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codecs/error.hpp"
#include "remote/http_client.hpp"
#include "remote/range_response.hpp"

namespace ncafs::remote {

using LogFunction = std::function<void(const std::string&)>;

// A SourceError that also says what kind of failure it was (for probe and
// for the offline fallback at open).
class FetchError : public SourceError {
public:
    FetchError(const std::string& url, const std::string& reason, Verdict kind, long status)
        : SourceError(url, reason), kind_(kind), status_(status) {}
    Verdict kind() const { return kind_; }
    long status() const { return status_; }

private:
    Verdict kind_;
    long status_;
};

struct FetchContext {
    HttpClient& client;
    const RemoteConfig& config;
    const LogFunction& log;
};

// Every request must name the same object (url is for messages). On
// success each destination holds its bytes; responses (when given) hold the
// last response of each request (for the ETag and size seen at open).
void fetch_ranges(const FetchContext& context, const std::string& url, const Expected& expected,
                  const std::vector<RangeRequest>& requests, std::vector<RangeResponse>* responses = nullptr);

}  // namespace ncafs::remote
