// `ncafs inspect FILE`: what an aggregation holds, without opening a partition.
#include "cli/commands.hpp"

#include <set>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/read/partitioned_source.hpp"
#include "cli/contained.hpp"
#include "cli/file_args.hpp"
#include "codecs/error.hpp"
#include "codecs/open_file.hpp"

namespace ncafs::cli {

namespace {

std::string list_text(const std::vector<uint64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

std::string names_text(const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
}

std::string transform_text(const agg::Aggregate& a, const agg::Fragment& f) {
    std::string s;
    bool perm = !f.transform_is_identity();
    std::vector<std::string> rev;
    for (size_t d = 0; d < f.reverse.size(); ++d)
        if (f.reverse[d]) rev.push_back(a.dims[d]);
    if (!rev.empty()) s += " reverse(" + names_text(rev) + ")";
    bool permuted = false;
    for (size_t k = 0; k < f.axis_to_master.size(); ++k)
        if (f.axis_to_master[k] != static_cast<int>(k)) permuted = true;
    if (permuted || f.axis_to_master.size() != a.dims.size()) {
        std::vector<std::string> axes;
        for (int d : f.axis_to_master) axes.push_back(d < 0 ? "1" : a.dims[static_cast<size_t>(d)]);
        s += " axes(" + names_text(axes) + ")";
    }
    for (const auto& p : f.part)
        if (p) {
            s += " part";
            break;
        }
    if (!f.units_text.empty()) s += " units(" + f.units_text + ")";
    (void)perm;
    return s;
}

// " (refused: RULE)" for a remote partition the -o remote options would not
// read (allow_root=URL, remote=no); "" otherwise. Judged without a request.
std::string remote_refusal(const std::string& path, const remote::RemoteConfig& config) {
    if (!remote::is_remote_url(path)) return {};
    if (!config.allowed) return " (refused: remote=no)";
    try {
        config.access.admit(path, !config.s3_endpoint.empty());
    } catch (const SourceError& e) {
        return " (" + std::string(e.what()).substr(e.file().size() + 2) + ")";
    }
    return {};
}

int inspect_files(const FileArgs& cl, std::ostream& out, std::ostream& err) {
    int rc = 0;
    for (const auto& file : cl.files) {
        agg::LoadedAggregation loaded;
        try {
            loaded = agg::load_aggregation(file, cl.options, agg::DatasetCache::shared());
        } catch (const Error& e) {
            err << e.what() << "\n";
            rc = 1;
            continue;
        }
        const Dataset& ds = *loaded.dataset;
        out << ds.origin << ": " << loaded.sources.size() << " master array(s), " << ds.variables.size()
            << " variable(s) presented, " << loaded.hidden_variables << " private variable(s) and "
            << loaded.hidden_dimensions << " private dimension(s) hidden\n";
        for (const auto& w : loaded.warnings) out << "warning: " << w << "\n";
        for (const auto& note : ds.notes) out << (note.refused ? "refused: " : "left out: ") << ds.origin << ": " << note.text << "\n";
        for (const auto& src : loaded.sources) {
            const agg::Aggregate& a = src->aggregate();
            out << "\n" << a.name << "(" << names_text(a.dims) << ") " << type_name(a.type) << " shape "
                << list_text(a.shape) << " units \"" << a.units << "\"\n";
            out << "  partition matrix: " << (a.matrix_dims.empty() ? "(scalar)" : names_text(a.matrix_dims)) << " "
                << list_text(a.matrix_shape) << ", " << a.fragments.size() << " partition(s)\n";
            const uint64_t total = a.element_count(), covered = a.covered_elements();
            out << "  coverage: " << covered << " of " << total << " elements";
            if (covered < total) out << " (" << (total - covered) << " uncovered, read as fill)";
            out << "\n";
            std::set<std::string> files;
            for (size_t i = 0; i < a.fragments.size(); ++i) files.insert(a.fragments.path(i));
            uint64_t on_disk = 0;
            size_t present = 0;
            for (const auto& f : files)
                if (auto id = identity_of(f)) on_disk += id->size, ++present;  // stat only, no open
            out << "  files: " << files.size() << " (" << present << " present, " << on_disk
                << " bytes on disk); master array: " << total * type_size(a.type) << " bytes\n";
            const size_t show = cl.all ? a.fragments.size() : std::min<size_t>(a.fragments.size(), 20);
            for (size_t i = 0; i < show; ++i) {
                const auto& f = a.fragments[i];
                out << "  [" << i << "]";
                for (size_t d = 0; d < f.start.size(); ++d)
                    out << " " << a.dims[d] << "[" << f.start[d] << ":" << f.start[d] + f.count[d] << ")";
                out << " <- " << (f.kind == agg::FragmentKind::Self ? "(this file)" : f.path) << ":"
                    << (f.variable.empty() ? "varid " + std::to_string(f.varid.value_or(-1)) : f.variable)
                    << transform_text(a, f) << remote_refusal(f.path, cl.remote) << "\n";
            }
            if (show < a.fragments.size()) out << "  ... " << a.fragments.size() - show << " more (--all lists them)\n";
        }
    }
    return rc;
}

}  // namespace

int run_inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    FileArgs cl;
    if (!parse_file_args(args, cl, err, "inspect")) return 2;
    return run_confined(sandbox_roots(cl), cl.sandbox, out, err,
                        [&cl](std::ostream& o, std::ostream& e) {
                            resolve_view_names(cl);  // confined: only the folders allowed are read
                            return inspect_files(cl, o, e);
                        });
}

}  // namespace ncafs::cli
