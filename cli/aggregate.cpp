#include "cli/commands.hpp"

#include <sys/stat.h>

#include <fstream>
#include <iostream>

#include "aggregation/write/input_files.hpp"
#include "aggregation/write/cf_writer.hpp"
#include "cli/aggregate_kerchunk.hpp"
#include "io/progress_meter.hpp"

namespace ncafs::cli {

namespace {
constexpr const char* kUsage =
    "usage: ncafs aggregate [--dim NAME]... [--relative|--absolute] [--classic]\n"
    "                       [--format nc|kerchunk [--inline-converted]]\n"
    "                       [--files-from FILE|-] [--glob PATTERN] -o OUT.nc [FILE|DIR]...\n"
    "  --format kerchunk    write OUT as a reference set (kerchunk JSON) of the same\n"
    "                       aggregation instead of a CF-1.13 file (docs/kerchunk.md)\n"
    "  --files-from FILE|-  also aggregate the paths listed in FILE (or standard input), one a line\n"
    "  --glob PATTERN       files taken from a DIR argument (walked recursively, sorted,\n"
    "                       symbolic links not followed out of DIR); default '*.nc'\n";

struct InputSpec {
    bool kerchunk = false;                // --format kerchunk
    bool inline_converted = false;        // --inline-converted
    std::vector<std::string> paths;       // FILE or DIR arguments, in order
    std::vector<std::string> lists;       // --files-from values
    std::string glob = "*.nc";
};

// Parses the arguments; returns -1 to go on, else the exit status.
int parse_arguments(const std::vector<std::string>& args, agg::AggregateWriterOptions& options, InputSpec& in,
                    std::ostream& out, std::ostream& err) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& v) {
            if (i + 1 >= args.size()) {
                err << "ncafs aggregate: " << a << " needs a value\n" << kUsage;
                return false;
            }
            v = args[++i];
            return true;
        };
        std::string v;
        if (a == "--dim") {
            if (!value(v)) return 2;
            options.dims.push_back(v);
        } else if (a == "-o" || a == "--output") {
            if (!value(options.output)) return 2;
        } else if (a == "--files-from") {
            if (!value(v)) return 2;
            in.lists.push_back(v);
        } else if (a == "--glob") {
            if (!value(in.glob)) return 2;
        } else if (a == "--relative") {
            options.absolute_uris = false;
        } else if (a == "--absolute") {
            options.absolute_uris = true;
        } else if (a == "--format") {
            if (!value(v)) return 2;
            if (v != "nc" && v != "kerchunk") {
                err << "ncafs aggregate: --format must be nc or kerchunk, got '" << v << "'\n" << kUsage;
                return 2;
            }
            in.kerchunk = v == "kerchunk";
        } else if (a == "--inline-converted") {
            in.inline_converted = true;
        } else if (a == "--classic") {
            options.classic = true;
        } else if (a == "-h" || a == "--help") {
            out << kUsage;
            return 0;
        } else if (a.size() > 1 && a[0] == '-') {
            err << "ncafs aggregate: unknown option " << a << "\n" << kUsage;
            return 2;
        } else {
            in.paths.push_back(a);
        }
    }
    if (in.inline_converted && !in.kerchunk) {
        err << "ncafs aggregate: --inline-converted needs --format kerchunk\n" << kUsage;
        return 2;
    }
    if (options.output.empty() || (in.paths.empty() && in.lists.empty())) {
        err << kUsage;
        return 2;
    }
    return -1;
}

// The partition files: arguments (directories walked), then each list.
std::vector<std::string> gather_files(const InputSpec& in, const std::string& output) {
    std::vector<std::string> files;
    for (const auto& p : in.paths) {
        struct stat st {};
        if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            auto walked = agg::walk_directory(p, in.glob, output);
            if (walked.empty()) throw UsageError(p + ": no file matching '" + in.glob + "' under this directory");
            files.insert(files.end(), walked.begin(), walked.end());
        } else {
            files.push_back(p);
        }
    }
    for (const auto& l : in.lists) {
        std::vector<std::string> listed;
        if (l == "-") {
            listed = agg::read_file_list(std::cin);
        } else {
            std::ifstream f(l);
            if (!f) throw SourceError(l, "cannot read the file list");
            listed = agg::read_file_list(f);
        }
        files.insert(files.end(), listed.begin(), listed.end());
    }
    if (files.empty()) throw UsageError("no input files");
    return files;
}

void print_summary(const agg::AggregateSummary& s, const std::string& output, std::ostream& out, std::ostream& err) {
    for (const auto& w : s.warnings) err << "ncafs aggregate: warning: " << w << "\n";
    out << output << ": " << s.files << " files, " << s.aggregation_variables << " aggregation variables, "
        << s.non_aggregated_variables << " non-aggregated variables; fragments";
    for (size_t d = 0; d < s.fragments_per_dim.size(); ++d) out << (d ? " x " : " ") << s.fragments_per_dim[d];
    out << "\n";
}

}  // namespace

int run_aggregate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    agg::AggregateWriterOptions options;
    InputSpec in;
    if (int status = parse_arguments(args, options, in, out, err); status >= 0) return status;
    try {
        std::vector<std::string> files = gather_files(in, options.output);
        agg::AggregateSummary s;
        {
            ProgressMeter meter("aggregate " + options.output, ProgressMeter::Unit::Files);
            if (meter.enabled()) options.progress = [&](size_t done, size_t total) { meter.update(done, total); };
            s = in.kerchunk ? write_kerchunk_aggregation(files, options, in.inline_converted, err)
                            : agg::write_cf_aggregation(files, options);
        }
        print_summary(s, options.output, out, err);
        return 0;
    } catch (const agg::AggregateInputError& e) {
        err << "ncafs aggregate: the files cannot be aggregated:\n" << e.what();
        return 1;
    } catch (const UsageError& e) {
        err << "ncafs aggregate: " << e.what() << "\n" << kUsage;
        return 2;
    } catch (const std::exception& e) {
        err << "ncafs aggregate: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace ncafs::cli
