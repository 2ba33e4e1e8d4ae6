#include "aggregation/aggregate_command.hpp"

#include "aggregation/aggregate_writer.hpp"

namespace ncafs {

namespace {
constexpr const char* kUsage =
    "usage: ncafs aggregate [--dim NAME]... [--relative|--absolute] [--classic] -o OUT.nc FILES...\n";
}

int aggregate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    agg::AggregateWriterOptions options;
    std::vector<std::string> files;
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
        if (a == "--dim") {
            std::string v;
            if (!value(v)) return 2;
            options.dims.push_back(v);
        } else if (a == "-o" || a == "--output") {
            if (!value(options.output)) return 2;
        } else if (a == "--relative") {
            options.absolute_uris = false;
        } else if (a == "--absolute") {
            options.absolute_uris = true;
        } else if (a == "--classic") {
            options.classic = true;
        } else if (a == "-h" || a == "--help") {
            out << kUsage;
            return 0;
        } else if (a.size() > 1 && a[0] == '-') {
            err << "ncafs aggregate: unknown option " << a << "\n" << kUsage;
            return 2;
        } else {
            files.push_back(a);
        }
    }
    if (options.output.empty() || files.empty()) {
        err << kUsage;
        return 2;
    }
    try {
        auto s = agg::write_cf_aggregation(files, options);
        for (const auto& w : s.warnings) err << "ncafs aggregate: warning: " << w << "\n";
        out << options.output << ": " << s.files << " files, " << s.aggregation_variables << " aggregation variables, "
            << s.plain_variables << " plain variables; fragments";
        for (size_t d = 0; d < s.fragments_per_dim.size(); ++d) out << (d ? " x " : " ") << s.fragments_per_dim[d];
        out << "\n";
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

}  // namespace ncafs
