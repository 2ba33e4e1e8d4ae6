// `ncafs inspect FILE`: what an aggregation holds, without opening a partition.
#include "cli/commands.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/reference_set/reference_dataset.hpp"
#include "cli/contained.hpp"
#include "cli/file_args.hpp"
#include "cli/inspect_coverage.hpp"
#include "codecs/error.hpp"
#include "io/open_file.hpp"

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

std::vector<std::shared_ptr<const agg::AggregatedSource>> master_arrays(const agg::LoadedAggregation& loaded) {
    auto all = loaded.sources;
    all.insert(all.end(), loaded.cf_sources.begin(), loaded.cf_sources.end());
    return all;
}

void print_array(const FileArgs& cl, const Dataset& ds, const agg::AggregatedSource& src, std::ostream& out) {
    const agg::Aggregate& a = src.aggregate();
    out << "\n" << a.name << "(" << names_text(a.dims) << ") " << type_name(a.type) << " shape " << list_text(a.shape)
        << " units \"" << a.units << "\"\n";
    out << "  partition matrix: " << (a.matrix_dims.empty() ? "(scalar)" : names_text(a.matrix_dims)) << " "
        << list_text(a.matrix_shape) << ", " << a.fragments.size() << " partition(s)\n";
    const uint64_t total = a.element_count(), covered = a.covered_elements();
    out << "  coverage: " << covered << " of " << total << " elements";
    if (covered < total) out << " (" << (total - covered) << " uncovered, read as fill)";
    out << "\n";
    const FileCensus census = file_census(src);
    out << "  files: " << census.files << " (" << census.present << " present, " << census.bytes
        << " bytes on disk); master array: " << total * type_size(a.type) << " bytes\n";
    for (const auto& c : coverage_map(src, ds, census.unreadable())) out << "  " << coverage_line(c) << "\n";
    for (const auto& f : census.missing) out << "  missing: " << f << "\n";
    for (const auto& f : census.refused) out << "  refused: " << f << " (outside the allowed roots)\n";
    if (!census.refused.empty())
        out << "  why refused: " << src.paths().outside_roots(*census.refused.begin()) << "\n";
    if (!census.missing.empty() && !src.paths().missing_partitions().fill)
        out << "  reads of missing files fail (EIO); -o missing_partitions=fill reads them as the fill value\n";
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

void print_report(const FileArgs& cl, const agg::LoadedAggregation& loaded, std::ostream& out) {
    const Dataset& ds = *loaded.dataset;
    const auto arrays = master_arrays(loaded);
    out << ds.origin << ": " << arrays.size() << " master array(s), " << ds.variables.size()
        << " variable(s) presented, " << loaded.hidden_variables << " private variable(s) and "
        << loaded.hidden_dimensions << " private dimension(s) hidden\n";
    if (auto refs = agg::reference_summary(ds))
        out << ds.origin << ": reference set (version " << refs->version << "): " << refs->references
            << " reference(s), " << refs->inline_references << " inline, to " << refs->objects << " object(s)\n";
    for (const auto& w : loaded.warnings) out << "warning: " << w << "\n";
    for (const auto& note : ds.notes) out << (note.refused ? "refused: " : "left out: ") << ds.origin << ": " << note.text << "\n";
    for (const auto& src : arrays) print_array(cl, ds, *src, out);
}

nlohmann::json array_json(const FileArgs& cl, const Dataset& ds, const agg::AggregatedSource& src) {
    const agg::Aggregate& a = src.aggregate();
    const FileCensus census = file_census(src);
    nlohmann::json dims = nlohmann::json::array();
    for (const auto& c : coverage_map(src, ds, census.unreadable())) {
        nlohmann::json d = {{"name", c.name}, {"length", c.length}, {"bar", c.bar},
                            {"partitions", c.partitions}, {"missing", c.missing}};
        if (c.first) d["first"] = *c.first, d["last"] = *c.last;
        if (c.first_date) d["first_date"] = *c.first_date, d["last_date"] = *c.last_date;
        dims.push_back(std::move(d));
    }
    nlohmann::json partitions = nlohmann::json::array();
    const size_t show = cl.all ? a.fragments.size() : std::min<size_t>(a.fragments.size(), 20);
    for (size_t i = 0; i < show; ++i) {
        const auto& f = a.fragments[i];
        partitions.push_back({{"start", f.start}, {"count", f.count},
                              {"file", f.kind == agg::FragmentKind::Self ? "" : f.path}, {"variable", f.variable}});
    }
    return {{"name", a.name}, {"dimensions", a.dims}, {"type", type_name(a.type)}, {"shape", a.shape},
            {"units", a.units}, {"partition_matrix", {{"dimensions", a.matrix_dims}, {"shape", a.matrix_shape}}},
            {"partitions", a.fragments.size()}, {"elements", a.element_count()},
            {"covered_elements", a.covered_elements()},
            {"files", census.files}, {"files_present", census.present}, {"bytes_on_disk", census.bytes},
            {"missing_files", census.missing}, {"refused_files", census.refused}, {"coverage", std::move(dims)}, {"partition_list", std::move(partitions)},
            {"partition_list_complete", show == a.fragments.size()}};
}

nlohmann::json report_json(const FileArgs& cl, const agg::LoadedAggregation& loaded) {
    const Dataset& ds = *loaded.dataset;
    nlohmann::json arrays = nlohmann::json::array(), notes = nlohmann::json::array();
    for (const auto& src : master_arrays(loaded)) arrays.push_back(array_json(cl, ds, *src));
    for (const auto& note : ds.notes)
        notes.push_back({{"name", note.name}, {"text", note.text}, {"refused", note.refused}});
    nlohmann::json refs;  // null for an aggregation
    if (auto s = agg::reference_summary(ds))
        refs = {{"version", s->version}, {"references", s->references}, {"inline", s->inline_references},
                {"objects", s->objects}};
    return {{"file", ds.origin}, {"reference_set", std::move(refs)}, {"variables_presented", ds.variables.size()},
            {"private_variables", loaded.hidden_variables}, {"private_dimensions", loaded.hidden_dimensions},
            {"warnings", loaded.warnings}, {"left_out", std::move(notes)}, {"master_arrays", std::move(arrays)}};
}

int inspect_files(const FileArgs& cl, std::ostream& out, std::ostream& err) {
    int rc = 0;
    nlohmann::json files = nlohmann::json::array();
    for (const auto& file : cl.files) {
        agg::LoadedAggregation loaded;
        name_confined_subject(file);
        try {
            loaded = agg::load_aggregation(file, options_for(cl, file), agg::DatasetCache::shared());
        } catch (const Error& e) {
            err << e.what() << "\n";
            rc = 1;
            continue;
        }
        if (cl.json)
            files.push_back(report_json(cl, loaded));
        else
            print_report(cl, loaded, out);
    }
    // Names are bytes, not always UTF-8: invalid sequences become U+FFFD.
    if (cl.json)
        out << nlohmann::json{{"files", std::move(files)}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
    return rc;
}

}  // namespace

int run_inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    FileArgs cl;
    if (!parse_file_args(args, cl, err, "inspect")) return 2;
    return run_confined(sandbox_roots(cl), cl.sandbox, out, err, subject_of(cl.files),
                        [&cl](std::ostream& o, std::ostream& e) {
                            resolve_view_names(cl);  // confined: only the folders allowed are read
                            return inspect_files(cl, o, e);
                        });
}

}  // namespace ncafs::cli
