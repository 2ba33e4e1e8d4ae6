// Range GETs with libcurl. Requests of one call run in parallel on a curl
// multi handle (HTTP/2 multiplexed where the server offers it); multi
// handles are pooled so their connections stay alive between calls and
// threads; DNS answers and TLS sessions are shared by all (CURLSH). No
// judgement here: the caller checks each result (range_response.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "remote/object_address.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::remote {

struct RangeRequest {
    const ObjectAddress* address = nullptr;
    uint64_t offset = 0;
    uint64_t length = 0;       // > 0
    std::string if_match;      // ETag the object must still have ("" = none)
    char* destination = nullptr;  // room for exactly length bytes
};

struct RangeResponse {
    int curl_code = 0;          // CURLcode
    std::string curl_error;     // curl's error text when curl_code != 0
    long status = 0;            // HTTP status of the last response
    std::string etag, last_modified, content_range;
    int64_t content_length = -1;
    uint64_t received = 0;      // body bytes written to destination
    bool overflow = false;      // the body was longer than length (aborted)
    std::string error_body;     // start of a non-2xx body (S3 error XML)
};

class HttpClient {
public:
    explicit HttpClient(const RemoteConfig& config);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Runs every request (in parallel) and fills responses[i] for requests[i];
    // a transfer still running after `timeout` ends with CURLE_OPERATION_TIMEDOUT.
    void perform(std::span<const RangeRequest> requests, std::span<RangeResponse> responses,
                 std::chrono::milliseconds timeout);
    // Aborts the transfers under way and every later one (CURLE_ABORTED_BY_CALLBACK).
    void cancel();
    bool cancelled() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace ncafs::remote
