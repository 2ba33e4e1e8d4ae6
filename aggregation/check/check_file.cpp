#include "aggregation/check/check_file.hpp"

#include <algorithm>
#include <future>
#include <map>
#include <optional>

#include "aggregation/check/cf_validation.hpp"
#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/reference_set/reference_dataset.hpp"
#include "codecs/cdf/header_writer.hpp"
#include "io/error.hpp"
#include "aggregation/zarr_store/remote_zarr_prefix.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

namespace {

// Lines of refused references `check` prints for one reference set before it counts the rest.
constexpr size_t kReferenceReports = 20;

// "FILE: MESSAGE" unless the message already starts with the file's name.
std::string with_file_name(const std::string& file, const std::string& message) {
    return message.rfind(file, 0) == 0 ? message : file + ": " + message;
}

const char* status_word(remote::RemoteStore::Status s) {
    switch (s) {
        case remote::RemoteStore::Status::Ok: return "ok";
        case remote::RemoteStore::Status::Missing: return "missing";
        case remote::RemoteStore::Status::Forbidden: return "forbidden";
        case remote::RemoteStore::Status::Unreachable: return "unreachable";
        case remote::RemoteStore::Status::Error: break;
    }
    return "cannot be read";
}

using Probes = std::map<std::string, remote::RemoteStore::Probe>;

// A Zarr store's URL names no object (its root answers 404 or 403): opening
// and verifying it (its metadata fetched) says what is wrong instead.
bool is_remote_file(const Fragment& f) {
    return f.kind == FragmentKind::File && remote::is_remote_url(f.path) && !names_zarr_store(f.path);
}

// Every remote object the aggregation names, probed once and 16 at a time:
// the whole check takes about remote_timeout= per 16 slow objects, not per object.
Probes probe_remote_objects(const LoadedAggregation& loaded) {
    constexpr size_t kAtOnce = 16;
    std::vector<std::string> urls;
    for (const auto& src : loaded.sources)
        for (const auto& f : src->aggregate().fragments)
            if (is_remote_file(f)) urls.push_back(f.path);
    std::sort(urls.begin(), urls.end());
    urls.erase(std::unique(urls.begin(), urls.end()), urls.end());
    Probes probes;
    for (size_t start = 0; start < urls.size(); start += kAtOnce) {
        std::vector<std::future<remote::RemoteStore::Probe>> running;
        for (size_t i = start; i < std::min(urls.size(), start + kAtOnce); ++i)
            running.push_back(std::async(std::launch::async, [&url = urls[i]] {
                return remote::RemoteStore::shared().probe(url);
            }));
        for (size_t k = 0; k < running.size(); ++k) probes.emplace(urls[start + k], running[k].get());
    }
    return probes;
}

// For a remote fragment: what the server says about it, as a finding
// ("missing (HTTP 404)"); nullopt when it is there or the probe is not
// decisive (Error): then opening and verifying it tells the reason.
std::optional<std::string> remote_problem(const Fragment& f, const Probes& probes) {
    if (!is_remote_file(f)) return std::nullopt;
    const auto& probe = probes.at(f.path);
    if (probe.status == remote::RemoteStore::Status::Ok || probe.status == remote::RemoteStore::Status::Error)
        return std::nullopt;
    std::string detail = probe.detail;
    if (detail.rfind(f.path + ": ", 0) == 0) detail = detail.substr(f.path.size() + 2);
    return f.path + ": remote object " + status_word(probe.status) + (detail.empty() ? "" : " (" + detail + ")") +
           " (partition " + f.where + ")";
}

// Opens and verifies every fragment of each master array; notes uncovered cells.
void check_fragments(const LoadedAggregation& loaded, const std::string& file, std::vector<CheckFinding>& found) {
    const Probes probes = probe_remote_objects(loaded);
    for (const auto& src : loaded.sources) {
        const Aggregate& a = src->aggregate();
        for (size_t i = 0; i < a.fragments.size(); ++i) {
            if (auto problem = remote_problem(a.fragments[i], probes)) {
                found.push_back({true, with_file_name(file, *problem)});
                continue;
            }
            try {
                if (auto filled = src->verify_fragment(i)) found.push_back({true, with_file_name(file, *filled)});
            } catch (const std::exception& e) {
                found.push_back({true, with_file_name(file, e.what())});
            }
        }
        const uint64_t total = a.element_count(), covered = a.covered_elements();
        if (covered < total)
            found.push_back({false, a.file + ": " + a.name + ": " + std::to_string(total - covered) + " of " +
                                        std::to_string(total) + " elements covered by no partition (read as fill)"});
    }
}

}  // namespace

std::vector<CheckFinding> check_aggregation_file(const std::string& file, const AggregationOptions& options,
                                                 DatasetCache& cache, bool verify_coordinates) {
    std::vector<CheckFinding> found;
    LoadedAggregation loaded;
    try {
        loaded = load_aggregation(file, options, cache);
    } catch (const std::exception& e) {
        // Not only Error: a library exception (a bad number) must not end the
        // run before the next FILE, and its message must name this one.
        found.push_back({true, with_file_name(file, e.what())});
        return found;
    }
    // The file's own refusals (HDF5 external storage...) fail the check; what was only left out warns.
    for (const auto& note : loaded.dataset->notes) found.push_back({note.refused, loaded.dataset->origin + ": " + note.text});
    // A dataset no classic file holds (a fixed dimension of length 0, from a
    // netCDF-4 UNLIMITED one with no record yet) has no .nc view; its other views do.
    try {
        (void)cdf::encode_cdf_header(*loaded.dataset);
    } catch (const UsageError& e) {
        const std::string prefix = loaded.dataset->origin + ": ", why = e.what();
        const std::string reason = why.starts_with(prefix) ? why.substr(prefix.size()) : why;
        found.push_back({false, prefix + "no .nc view: " + reason});
    }
    // A reference set: every reference tried (allowed, present, in range).
    for (auto& problem : reference_problems(*loaded.dataset, kReferenceReports)) found.push_back({true, std::move(problem)});
    if (!loaded.cf_sources.empty()) {
        // G3-G5: docs/conventions/README.md "Validation", fragment by fragment, optionally A9.
        try {
            auto report = check_cf_aggregation(file, options, cache, verify_coordinates);
            for (const auto& w : report.warnings) found.push_back({false, w});
            for (const auto& p : report.problems) found.push_back({true, p});
        } catch (const std::exception& e) {
            found.push_back({true, with_file_name(file, e.what())});
        }
    } else {
        for (const auto& w : loaded.warnings) found.push_back({false, w});
    }
    check_fragments(loaded, file, found);
    return found;
}

}  // namespace ncafs::agg
