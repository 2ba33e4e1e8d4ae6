// `ncafs check FILE...`: one line per problem on out, warnings prefixed
// "warning: ", "ok" when every file is clean (aggregation/check/check_file.hpp).
#include "cli/commands.hpp"

#include <chrono>
#include <cstdio>

#include "aggregation/check/check_file.hpp"
#include "cli/contained.hpp"
#include "cli/file_args.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::cli {

int run_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    FileArgs cl;
    if (!parse_file_args(args, cl, err, "check")) return 2;
    // Probes and opens remote partitions; cache_dir is opened (created) here,
    // before the sandbox, which allows only what exists.
    remote::RemoteStore::configure_shared(cl.remote);
    const auto start = std::chrono::steady_clock::now();
    const int status = run_confined(sandbox_roots(cl), cl.sandbox, out, err, subject_of(cl.files),
                                    [&cl](std::ostream& out, std::ostream&) {
        resolve_view_names(cl);  // confined: only the folders allowed are read
        size_t problems = 0;
        for (const auto& file : cl.files) {
            name_confined_subject(file);
            for (const auto& finding : agg::check_aggregation_file(file, options_for(cl, file),
                                                                   agg::DatasetCache::shared(), cl.verify_coordinates)) {
                out << (finding.problem ? "" : "warning: ") << finding.text << "\n";
                if (finding.problem) ++problems;
            }
        }
        if (problems == 0) out << "ok\n";
        return problems == 0 ? 0 : 1;
    });
    // On err: out keeps the findings alone. Remote objects may take up to remote_timeout= each.
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char took[64];
    std::snprintf(took, sizeof took, "%.1f s", seconds);
    err << "ncafs check: " << cl.files.size() << (cl.files.size() == 1 ? " file" : " files") << " checked in " << took
        << "\n";
    return status;
}

}  // namespace ncafs::cli
