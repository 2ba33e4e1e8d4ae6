#include "remote/range_fetcher.hpp"

#include <algorithm>
#include <thread>

#include "remote/backoff.hpp"
#include "remote/network_scope.hpp"

namespace ncafs::remote {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds ms) {
    return std::to_string(ms.count() / 1000) + "." + std::to_string(ms.count() % 1000 / 100) + " s";
}

[[noreturn]] void give_up(const FetchContext& context, const std::string& url, const Judgement& j,
                          const RangeResponse& r, unsigned attempts) {
    if (context.client.cancelled()) throw FetchError(url, "cancelled: the mount is stopping", Verdict::Fail, 0);
    std::string reason = j.reason;
    if (attempts > 1) reason += " (after " + std::to_string(attempts) + " attempts)";
    Verdict kind = j.verdict == Verdict::Retry && unreachable(r) ? Verdict::Unreachable : j.verdict;
    if (timed_out(r))
        reason += " (remote_timeout=" + seconds_text(context.config.timeout) + " for the whole fetch)";
    throw FetchError(url, reason, kind, r.status);
}

// Sleeps in short steps, so that cancel() ends the wait too.
void wait_unless_cancelled(const HttpClient& client, std::chrono::milliseconds wait) {
    const Clock::time_point until = Clock::now() + wait;
    while (!client.cancelled() && Clock::now() < until)
        std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(100), until - Clock::now()));
}

std::chrono::milliseconds left_until(Clock::time_point deadline) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
}

}  // namespace

void fetch_ranges(const FetchContext& context, const std::string& url, const Expected& expected,
                  const std::vector<RangeRequest>& requests, std::vector<RangeResponse>* responses) {
    if (!network_allowed()) throw NetworkNeeded(url);
    const Clock::time_point deadline = Clock::now() + context.config.timeout;
    std::vector<RangeResponse> results(requests.size());
    std::vector<size_t> pending(requests.size());
    for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
    Backoff backoff(context.config, deadline);
    while (!pending.empty()) {
        std::vector<RangeRequest> round;
        for (size_t i : pending) round.push_back(requests[i]);
        std::vector<RangeResponse> answers(round.size());
        context.client.perform(round, answers, left_until(deadline));
        std::vector<size_t> again;
        const Judgement* retry_reason = nullptr;
        std::vector<Judgement> judgements;
        judgements.reserve(round.size());
        for (size_t k = 0; k < round.size(); ++k) {
            results[pending[k]] = answers[k];
            judgements.push_back(judge(round[k], answers[k], expected));
            const Judgement& j = judgements.back();
            if (j.verdict == Verdict::Retry) {
                again.push_back(pending[k]);
                retry_reason = &j;
            } else if (j.verdict != Verdict::Ok) {
                give_up(context, url, j, answers[k], backoff.attempts());
            }
        }
        if (!again.empty()) {
            std::optional<std::chrono::milliseconds> wait = backoff.next();
            if (!wait || context.client.cancelled())
                give_up(context, url, *retry_reason, results[again.back()], backoff.attempts());
            wait_unless_cancelled(context.client, *wait);
        }
        pending = std::move(again);
    }
    if (responses) *responses = std::move(results);
}

}  // namespace ncafs::remote
