#include "remote/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <mutex>
#include <vector>

#include "remote/connect_check.hpp"
#include "io/mutex.hpp"

namespace ncafs::remote {
namespace {

constexpr size_t kErrorBodyLimit = 2048;
constexpr long kParallelPerHost = 8;
constexpr unsigned kMaxRedirects = 5;

// One transfer in flight: where its body goes and what its headers said.
struct Transfer {
    const RangeRequest* request = nullptr;
    RangeResponse* response = nullptr;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    std::string range;
    char error[CURL_ERROR_SIZE] = {};
    ConnectCheck connect;   // the address connected to (connect_check.hpp)
    std::string redirect;   // a 3xx answer's target (absolute), followed by perform()
};

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trimmed(const char* p, size_t n) {
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ')) --n;
    while (n > 0 && *p == ' ') ++p, --n;
    return std::string(p, n);
}

// Each response (a redirect, then the answer) starts with a status line:
// only the last response's headers count.
size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t n = size * count;
    std::string line = trimmed(data, n);
    RangeResponse& r = *t->response;
    if (line.rfind("HTTP/", 0) == 0) {
        size_t space = line.find(' ');
        r.status = space == std::string::npos ? 0 : std::strtol(line.c_str() + space + 1, nullptr, 10);
        r.etag.clear(), r.last_modified.clear(), r.content_range.clear(), r.error_body.clear();
        r.content_length = -1;
        return n;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) return n;
    std::string name = lower(line.substr(0, colon));
    std::string value = trimmed(line.c_str() + colon + 1, line.size() - colon - 1);
    if (name == "etag") r.etag = value;
    else if (name == "last-modified") r.last_modified = value;
    else if (name == "content-range") r.content_range = value;
    else if (name == "content-length") r.content_length = std::strtoll(value.c_str(), nullptr, 10);
    return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t n = size * count;
    RangeResponse& r = *t->response;
    if (r.status < 200 || r.status > 299) {
        r.error_body.append(data, std::min(n, kErrorBodyLimit - std::min(kErrorBodyLimit, r.error_body.size())));
        return n;
    }
    if (r.received + n > t->request->length) {
        r.overflow = true;
        return 0;  // aborts the transfer: never more than asked for
    }
    std::memcpy(t->request->destination + r.received, data, n);
    r.received += n;
    return n;
}

// Called by libcurl about once a second and on every chunk: a non-zero
// answer aborts the transfer (cancel()).
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<const std::atomic<bool>*>(user)->load(std::memory_order_relaxed) ? 1 : 0;
}

// libcurl pairs each lock with an unlock in another call: beyond the analysis.
void lock_share(CURL*, curl_lock_data data, curl_lock_access, void* user) NCAFS_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Mutex*>(user)[data % CURL_LOCK_DATA_LAST].lock();
}
void unlock_share(CURL*, curl_lock_data data, void* user) NCAFS_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Mutex*>(user)[data % CURL_LOCK_DATA_LAST].unlock();
}

}  // namespace

struct HttpClient::Impl {
    RemoteConfig config;
    CURLSH* share = nullptr;
    Mutex share_locks[CURL_LOCK_DATA_LAST];  // taken by libcurl only; lock order: leaves
    Mutex pool_mutex;  // lock order: a leaf
    std::vector<CURLM*> idle_multis NCAFS_GUARDED_BY(pool_mutex);  // each keeps its own live connections
    std::vector<CURL*> idle_easies NCAFS_GUARDED_BY(pool_mutex);
    std::atomic<bool> cancelled{false};

    CURLM* take_multi();
    void give_back(CURLM* multi, std::vector<Transfer>& transfers);
    void configure(Transfer& t, std::chrono::milliseconds timeout);
    void run(CURLM* multi, std::vector<Transfer>& transfers);
    // The redirect target of each request ("" = none).
    std::vector<std::string> run_round(std::span<const RangeRequest> requests, std::span<RangeResponse> responses,
                                       std::chrono::milliseconds timeout);
    // Every hop of a redirect within one deadline.
    void perform_hop(std::span<const RangeRequest> requests, std::span<RangeResponse> responses, unsigned hop,
                     std::chrono::steady_clock::time_point deadline);
};

CURLM* HttpClient::Impl::take_multi() {
    MutexLock lock(pool_mutex);
    if (!idle_multis.empty()) {
        CURLM* m = idle_multis.back();
        idle_multis.pop_back();
        return m;
    }
    CURLM* m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, kParallelPerHost);
    curl_multi_setopt(m, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    return m;
}

void HttpClient::Impl::give_back(CURLM* multi, std::vector<Transfer>& transfers) {
    MutexLock lock(pool_mutex);
    for (Transfer& t : transfers) {
        curl_multi_remove_handle(multi, t.easy);
        curl_slist_free_all(t.headers);
        idle_easies.push_back(t.easy);
    }
    idle_multis.push_back(multi);
}

void HttpClient::Impl::configure(Transfer& t, std::chrono::milliseconds timeout) {
    {
        MutexLock lock(pool_mutex);
        if (!idle_easies.empty()) t.easy = idle_easies.back(), idle_easies.pop_back();
    }
    if (t.easy) curl_easy_reset(t.easy);
    else t.easy = curl_easy_init();
    const RangeRequest& q = *t.request;
    const ObjectAddress& a = *q.address;
    CURL* e = t.easy;
    t.range = std::to_string(q.offset) + "-" + std::to_string(q.offset + q.length - 1);
    for (const std::string& h : a.headers) t.headers = curl_slist_append(t.headers, h.c_str());
    if (!q.if_match.empty()) t.headers = curl_slist_append(t.headers, ("If-Match: " + q.if_match).c_str());
    curl_easy_setopt(e, CURLOPT_URL, a.http_url.c_str());
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_RANGE, t.range.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_SHARE, share);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "ncafs");
    const long total_ms = std::max<long>(1, static_cast<long>(timeout.count()));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, total_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     std::min(total_ms, static_cast<long>(config.connect_timeout.count())));
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, &cancelled);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(config.low_speed_time.count()));
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!config.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, config.ca_file.c_str());
    if (!a.sigv4.empty()) {
        curl_easy_setopt(e, CURLOPT_AWS_SIGV4, a.sigv4.c_str());
        curl_easy_setopt(e, CURLOPT_USERPWD, a.userpwd.c_str());
    }
    // The access policy (access_policy.hpp) judges every hop of a redirect
    // (perform) and every address connected to; a proxy would hide the latter.
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_UNRESTRICTED_AUTH, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    t.connect.private_ok = a.private_ok;
    install_connect_check(e, &t.connect);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
}

void HttpClient::Impl::run(CURLM* multi, std::vector<Transfer>& transfers) {
    for (Transfer& t : transfers) curl_multi_add_handle(multi, t.easy);
    int running = 1;
    while (running > 0) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) break;
        if (running > 0) curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
        if (m->msg != CURLMSG_DONE) continue;
        Transfer* t = nullptr;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
        t->response->curl_code = m->data.result;
        if (m->data.result != CURLE_OK)
            t->response->curl_error = t->error[0] ? t->error : curl_easy_strerror(m->data.result);
        if (m->data.result != CURLE_OK && !t->connect.refused.empty()) {
            t->response->curl_code = CURLE_ABORTED_BY_CALLBACK;  // a rule, not a failure worth retrying
            t->response->curl_error = t->connect.refused;
        }
        char* location = nullptr;  // where a 3xx points, resolved by curl (not followed)
        curl_easy_getinfo(m->easy_handle, CURLINFO_REDIRECT_URL, &location);
        if (t->response->status / 100 == 3 && location) t->redirect = location;
    }
}

HttpClient::HttpClient(const RemoteConfig& config) : impl_(std::make_unique<Impl>()) {
    static std::once_flag global;
    std::call_once(global, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    impl_->config = config;
    impl_->share = curl_share_init();
    curl_share_setopt(impl_->share, CURLSHOPT_LOCKFUNC, lock_share);
    curl_share_setopt(impl_->share, CURLSHOPT_UNLOCKFUNC, unlock_share);
    curl_share_setopt(impl_->share, CURLSHOPT_USERDATA, impl_->share_locks);
    curl_share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
}

HttpClient::~HttpClient() {
    for (CURLM* m : impl_->idle_multis) curl_multi_cleanup(m);
    for (CURL* e : impl_->idle_easies) curl_easy_cleanup(e);
    curl_share_cleanup(impl_->share);
}

void HttpClient::cancel() { impl_->cancelled = true; }

bool HttpClient::cancelled() const { return impl_->cancelled.load(std::memory_order_relaxed); }

void HttpClient::perform(std::span<const RangeRequest> requests, std::span<RangeResponse> responses,
                         std::chrono::milliseconds timeout) {
    impl_->perform_hop(requests, responses, 0, std::chrono::steady_clock::now() + timeout);
}

std::vector<std::string> HttpClient::Impl::run_round(std::span<const RangeRequest> requests,
                                                     std::span<RangeResponse> responses,
                                                     std::chrono::milliseconds timeout) {
    std::vector<Transfer> transfers(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
        responses[i] = RangeResponse{};
        transfers[i].request = &requests[i];
        transfers[i].response = &responses[i];
        configure(transfers[i], timeout);
    }
    CURLM* multi = take_multi();
    run(multi, transfers);
    give_back(multi, transfers);
    std::vector<std::string> redirects;
    for (Transfer& t : transfers) redirects.push_back(std::move(t.redirect));
    return redirects;
}

// Runs the requests; then the redirected ones again at their targets, when
// the access policy lets them go there (else the refusal is their error).
void HttpClient::Impl::perform_hop(std::span<const RangeRequest> requests, std::span<RangeResponse> responses,
                                   unsigned hop, std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const std::vector<std::string> redirects = run_round(requests, responses, std::max(left, std::chrono::milliseconds(1)));
    std::vector<ObjectAddress> targets;
    targets.reserve(requests.size());  // the next requests point into it
    std::vector<RangeRequest> next;
    std::vector<size_t> origin;
    for (size_t i = 0; i < requests.size(); ++i) {
        if (redirects[i].empty()) continue;
        Redirect r = config.access.redirect_address(*requests[i].address, redirects[i]);
        if (r.address && hop >= kMaxRedirects) r = {std::nullopt, "more than 5 redirects"};
        if (!r.address) {
            responses[i].curl_code = CURLE_TOO_MANY_REDIRECTS;  // not retried
            responses[i].curl_error = r.refusal;
            continue;
        }
        targets.push_back(std::move(*r.address));
        next.push_back(requests[i]);
        next.back().address = &targets.back();
        origin.push_back(i);
    }
    if (next.empty()) return;
    std::vector<RangeResponse> answers(next.size());
    perform_hop(next, answers, hop + 1, deadline);
    for (size_t k = 0; k < next.size(); ++k) responses[origin[k]] = std::move(answers[k]);
}

}  // namespace ncafs::remote
