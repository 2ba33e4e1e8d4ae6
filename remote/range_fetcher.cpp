#include "remote/range_fetcher.hpp"

#include <thread>

#include "remote/backoff.hpp"

namespace ncafs::remote {
namespace {

[[noreturn]] void give_up(const FetchContext& context, const std::string& url, const Judgement& j,
                          const RangeResponse& r, unsigned attempts) {
    std::string reason = j.reason;
    if (attempts > 1) reason += " (after " + std::to_string(attempts) + " attempts)";
    Verdict kind = j.verdict == Verdict::Retry && unreachable(r) ? Verdict::Unreachable : j.verdict;
    if (context.log) context.log("remote: " + url + ": " + reason);
    throw FetchError(url, reason, kind, r.status);
}

}  // namespace

void fetch_ranges(const FetchContext& context, const std::string& url, const Expected& expected,
                  const std::vector<RangeRequest>& requests, std::vector<RangeResponse>* responses) {
    std::vector<RangeResponse> results(requests.size());
    std::vector<size_t> pending(requests.size());
    for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
    Backoff backoff(context.config);
    while (!pending.empty()) {
        std::vector<RangeRequest> round;
        for (size_t i : pending) round.push_back(requests[i]);
        std::vector<RangeResponse> answers(round.size());
        context.client.perform(round, answers);
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
            if (!wait) give_up(context, url, *retry_reason, results[again.back()], backoff.attempts());
            std::this_thread::sleep_for(*wait);
        }
        pending = std::move(again);
    }
    if (responses) *responses = std::move(results);
}

}  // namespace ncafs::remote
