// `ncafs check FILE...`: one line per problem on out, warnings prefixed
// "warning: ", "ok" when every file is clean (aggregation/check/check_file.hpp).
#include "cli/commands.hpp"

#include <chrono>
#include <cstdio>

#include "aggregation/check/check_file.hpp"
#include "cli/file_args.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::cli {

int run_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    FileArgs cl;
    if (!parse_file_args(args, cl, err, "check")) return 2;
    remote::RemoteStore::configure_shared(cl.remote);  // probes and opens remote partitions
    const auto start = std::chrono::steady_clock::now();
    size_t problems = 0;
    for (const auto& file : cl.files)
        for (const auto& finding :
             agg::check_aggregation_file(file, cl.options, agg::DatasetCache::shared(), cl.verify_coordinates)) {
            out << (finding.problem ? "" : "warning: ") << finding.text << "\n";
            if (finding.problem) ++problems;
        }
    if (problems == 0) out << "ok\n";
    // On err: out keeps the findings alone. Remote objects may take up to remote_timeout= each.
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char took[64];
    std::snprintf(took, sizeof took, "%.1f s", seconds);
    err << "ncafs check: " << cl.files.size() << (cl.files.size() == 1 ? " file" : " files") << " checked in " << took
        << "\n";
    return problems == 0 ? 0 : 1;
}

}  // namespace ncafs::cli
