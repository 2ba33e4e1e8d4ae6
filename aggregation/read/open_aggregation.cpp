#include "aggregation/read/open_aggregation.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <mutex>
#include <sstream>

#include "aggregation/model/parse_deadline.hpp"
#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/terms/cf_fragment_source.hpp"
#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/json/nca_parser.hpp"
#include "aggregation/read/path_policy.hpp"
#include "aggregation/read/sibling_sources.hpp"
#include "aggregation/reference_set/reference_dataset.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/error.hpp"
#include "codecs/open_dataset.hpp"
#include "codecs/sniff.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "io/system_call_error.hpp"

namespace ncafs {

namespace {

// The attributes that make a variable an aggregation variable (the same test as is_aggregation_file's of netCDF-4 files).
bool has_aggregation_attributes(const std::vector<Attribute>& attributes) {
    auto has = [&](const char* name) {
        return std::any_of(attributes.begin(), attributes.end(), [&](const Attribute& a) { return a.name == name; });
    };
    return has("nca_array") || has("cfa_array") || (has("aggregated_dimensions") && has("aggregated_data"));
}

// A classic file, by our own header reader (names only: a million-partition
// JSON is neither read nor copied here; netcdf-c would read all of it).
bool is_classic_aggregation_file(int fd, const std::string& path) {
    int copy = ::dup(fd);
    if (copy < 0) return false;
    // Throws FormatError naming the file.
    const cdf::CdfHeader header = cdf::read_cdf_header(*OpenFile::adopt(copy, path), nullptr, cdf::AttributeValues::Skip);
    return std::any_of(header.variables.begin(), header.variables.end(),
                       [](const cdf::CdfVariable& v) { return has_aggregation_attributes(v.attributes); });
}

}  // namespace

bool is_aggregation_file(const std::string& path, const ConfinedRoots* within) {
    // O_NONBLOCK, regular files only, confined when asked; then only this fd.
    OpenResult opened = open_regular_file(path, within);
    if (!opened.fd) return false;
    const FileFormat format = sniff_fd(opened.fd.get());
    if (!is_netcdf_format(format)) return false;
    if (format == FileFormat::Cdf) return is_classic_aggregation_file(opened.fd.get(), path);
    // Through the gateway: read first by a helper process, opened once in netcdf-c.
    try {
        return netcdf::any_variable_has_attributes(OpenFile::adopt(opened.fd.release(), path, opened.st),
                                                   {{"nca_array"}, {"cfa_array"},
                                                    {"aggregated_dimensions", "aggregated_data"}});
    } catch (const std::exception&) {
        return false;  // not a file netcdf-c reads: not an aggregation either
    }
}

std::shared_ptr<const Dataset> open_aggregation(const std::string& path, const AggregationOptions& options,
                                                agg::DatasetCache& cache) {
    return agg::load_aggregation(path, options, cache).dataset;
}

}  // namespace ncafs

namespace ncafs::agg {

std::string conventions_without_aggregation(const std::string& conventions) {
    std::string out;
    std::string token;
    std::istringstream in(conventions);
    // Tokens are blank- or comma-separated (CF recommends blanks; commas occur).
    std::string norm = conventions;
    for (char& c : norm)
        if (c == ',') c = ' ';
    std::istringstream words(norm);
    while (words >> token) {
        if (token == "NCA" || token == "CFA" || token.rfind("CFA-", 0) == 0 || token.rfind("NCA-", 0) == 0) continue;
        out += (out.empty() ? "" : " ") + token;
    }
    return out;
}

namespace {

// What the steps of load_aggregation share: the aggregation file, what each
// of its variables becomes, and the presented dataset being built.
struct Loading {
    std::shared_ptr<const PathPolicy> paths;
    std::shared_ptr<const Dataset> file;
    LoadedAggregation out;
    std::shared_ptr<Dataset> presented = std::make_shared<Dataset>();
    std::vector<bool> keep_dim;  // per file dimension: used by a visible variable or a master
    std::vector<const Variable*> visible;
    std::vector<Aggregate> aggregates;  // G1/G2 masters, in visible order
    std::vector<bool> is_master;        // per visible variable
    // G3-G5 (CFA-0.6.x, CF drafts, CF-1.13): term-variable aggregations.
    CfAggregations cf;
    std::map<std::string, size_t> cf_index;
    std::set<std::string> cf_hidden_vars, cf_hidden_dims;
    std::vector<size_t> new_id;  // file dimension id -> presented id (SIZE_MAX: hidden)
    std::shared_ptr<SiblingSources> siblings = std::make_shared<SiblingSources>();  // the aggregated variables
};

// G3-G5 aggregation variables, if any, parsed together (they share term variables).
void parse_cf_style(Loading& ld, const AggregationOptions& options) {
    bool any_cf = false;
    for (const auto& v : ld.file->variables) any_cf |= is_cf_aggregation_variable(v);
    if (!any_cf) return;
    ld.cf = parse_cf_file(ld.paths->aggregation_file(), *ld.file, *ld.paths, options.limits);
    for (size_t i = 0; i < ld.cf.aggregates.size(); ++i) ld.cf_index[ld.cf.aggregates[i].aggregate.name] = i;
    ld.cf_hidden_vars.insert(ld.cf.hidden_variables.begin(), ld.cf.hidden_variables.end());
    ld.cf_hidden_dims.insert(ld.cf.hidden_dimensions.begin(), ld.cf.hidden_dimensions.end());
    for (const auto& w : ld.cf.warnings) ld.out.warnings.push_back(ld.paths->aggregation_file() + ": " + w);
}

// Each variable: hidden, a CF-style aggregation, an NCA/CFA master or non-aggregated; the dimensions that stay.
void classify_variables(Loading& ld, const AggregationOptions& options) {
    const Dataset& file = *ld.file;
    ld.keep_dim.assign(file.dimensions.size(), false);
    for (const auto& v : file.variables) {
        if (ld.cf_hidden_vars.count(v.name)) {
            ++ld.out.hidden_variables;
            continue;
        }
        if (ld.cf_index.count(v.name)) {
            for (const auto& d : ld.cf.aggregates[ld.cf_index[v.name]].aggregate.dims)
                ld.keep_dim[*file.find_dimension(d)] = true;
            ld.is_master.push_back(false);
            ld.visible.push_back(&v);
            continue;
        }
        if (is_nca_private(v)) {
            ++ld.out.hidden_variables;
            continue;
        }
        if (nca_generation(v)) {
            Aggregate a = parse_nca_variable(file, v, *ld.paths, options.limits);
            for (const auto& d : a.dims) ld.keep_dim[*file.find_dimension(d)] = true;
            ld.aggregates.push_back(std::move(a));
            ld.is_master.push_back(true);
        } else {
            for (size_t id : v.dimids) ld.keep_dim[id] = true;
            ld.is_master.push_back(false);
        }
        ld.visible.push_back(&v);
    }
    // Private term variables the Dataset model leaves out (netCDF-4 strings) count as hidden too.
    for (const auto& name : ld.cf_hidden_vars)
        if (!file.find_variable(name)) ++ld.out.hidden_variables;
}

// What the aggregation file's reader refused or left out, but for private
// term variables (often netCDF-4 strings): those are hidden, not left out.
void copy_notes(Loading& ld) {
    for (const auto& note : ld.file->notes)
        if (note.refused || !ld.cf_hidden_vars.count(note.name)) ld.presented->notes.push_back(note);
}

// The presented dimensions: all but those used only by private or hidden term variables.
void present_dimensions(Loading& ld) {
    const Dataset& file = *ld.file;
    // Dimensions no variable uses at all stay (they are part of the file);
    // only those used solely by private variables are hidden.
    std::vector<bool> used_by_private(file.dimensions.size(), false);
    for (const auto& v : file.variables)
        if (is_nca_private(v))
            for (size_t id : v.dimids) used_by_private[id] = true;
    ld.new_id.assign(file.dimensions.size(), SIZE_MAX);
    for (size_t d = 0; d < file.dimensions.size(); ++d) {
        if (!ld.keep_dim[d] && (used_by_private[d] || ld.cf_hidden_dims.count(file.dimensions[d].name))) {
            ++ld.out.hidden_dimensions;
            continue;
        }
        ld.new_id[d] = ld.presented->dimensions.size();
        ld.presented->dimensions.push_back(file.dimensions[d]);
    }
    // G3-G5 shapes come from the fragment sizes (cf-python bug #689: a dimension
    // written with length 0); the parser warned where they disagree.
    for (const auto& ca : ld.cf.aggregates)
        for (size_t k = 0; k < ca.aggregate.dims.size(); ++k)
            ld.presented->dimensions[ld.new_id[*file.find_dimension(ca.aggregate.dims[k])]].length = ca.aggregate.shape[k];
}

// Global attributes: Conventions without the aggregation's words (or the fragments' own, if recorded).
void present_attributes(Loading& ld) {
    const Attribute* fragment_conventions = ld.file->find_attribute(kFragmentConventions);
    for (const auto& a : ld.file->attributes) {
        if (a.name == "Conventions" && a.type == NcType::Char) {
            if (fragment_conventions) {
                ld.presented->attributes.push_back(Attribute::text("Conventions", fragment_conventions->as_text()));
                continue;
            }
            std::string c = conventions_without_aggregation(a.as_text());
            if (!c.empty()) ld.presented->attributes.push_back(Attribute::text("Conventions", c));
            continue;
        }
        if (a.name != kFragmentConventions) ld.presented->attributes.push_back(a);
    }
}

// The presented variable of an aggregation, read through source.
Variable aggregated_variable(const Loading& ld, const Aggregate& a, std::shared_ptr<const AggregatedSource> source) {
    Variable m;
    m.name = a.name;
    m.type = a.type;
    for (const auto& d : a.dims) m.dimids.push_back(ld.new_id[*ld.file->find_dimension(d)]);
    m.attributes = a.attributes;
    // missing_partitions=fill: a variable without a declared fill says which
    // value its missing partitions read as, so that clients mask it (a
    // coordinate of default fills would not decode as times).
    if (ld.paths->missing_partitions().fill && a.type != NcType::Char && !m.find_attribute("_FillValue") &&
        !m.find_attribute("missing_value"))
        m.attributes.push_back(Attribute{"_FillValue", a.type, a.fill});
    m.source = std::move(source);
    return m;
}

// The visible variables, in file order: aggregations get their sources, non-aggregated ones renumbered dimensions.
void present_variables(Loading& ld, DatasetCache& cache) {
    size_t next_master = 0;
    for (size_t i = 0; i < ld.visible.size(); ++i) {
        const Variable& v = *ld.visible[i];
        if (auto it = ld.cf_index.find(v.name); it != ld.cf_index.end()) {
            auto source = make_cf_source(std::move(ld.cf.aggregates[it->second]), ld.paths, cache, ld.siblings);
            ld.siblings->add(source);
            ld.out.cf_sources.push_back(source);
            ld.presented->variables.push_back(aggregated_variable(ld, source->aggregate(), source));
            continue;
        }
        if (!ld.is_master[i]) {
            Variable copy = v;
            for (auto& id : copy.dimids) id = ld.new_id[id];
            ld.presented->variables.push_back(std::move(copy));
            continue;
        }
        auto agg = std::make_shared<const Aggregate>(std::move(ld.aggregates[next_master++]));
        for (const auto& w : agg->warnings) ld.out.warnings.push_back(ld.paths->aggregation_file() + ": " + w);
        auto source = std::make_shared<const AggregatedSource>(agg, ld.paths, cache, nullptr, ld.siblings);
        ld.siblings->add(source);
        ld.out.sources.push_back(source);
        ld.presented->variables.push_back(aggregated_variable(ld, *agg, source));
    }
}

// The aggregation file itself (header only for now), opened for this load
// alone rather than kept in the cache: its JSON (about 150 bytes a
// partition) is freed once parsed. Its non-aggregated variables keep the open file.
std::shared_ptr<const Dataset> open_aggregation_file(const PathPolicy& paths, DatasetCache& cache) {
    const std::string& path = paths.aggregation_file();
    OpenResult r = open_regular_file(path, paths.confinement_of_aggregation_file());
    if (!r.fd && (r.error == EMFILE || r.error == ENFILE) && cache.drop_idle() > 0)  // idle partitions close, once
        r = open_regular_file(path, paths.confinement_of_aggregation_file());
    if (!r.fd) throw SystemCallError(path, "cannot open: " + r.reason, r.error);
    return std::make_shared<const Dataset>(open_dataset(OpenFile::adopt(r.fd.release(), path, r.st)));
}

}  // namespace

LoadedAggregation load_aggregation(const std::string& path, const AggregationOptions& options, DatasetCache& cache) {
    Loading ld;
    ld.paths = std::make_shared<const PathPolicy>(path, options.allowed_roots, options.path_rewrites,
                                                     options.missing_partitions, options.roots_rule);
    if (is_reference_set_file(ld.paths->aggregation_file(), ld.paths->confinement_of_aggregation_file())) {
        ld.out.dataset = open_reference_set(path, options);  // its arrays: no master array, no partition table
        return std::move(ld.out);
    }
    MetadataScope scope(ld.paths->aggregation_file());  // the parsers below count what they build
    ParseDeadline deadline(ld.paths->aggregation_file());  // and stop past it
    ld.file = open_aggregation_file(*ld.paths, cache);
    ld.presented->origin = ld.paths->aggregation_file();
    parse_cf_style(ld, options);
    classify_variables(ld, options);
    copy_notes(ld);
    present_dimensions(ld);
    present_attributes(ld);
    present_variables(ld, cache);
    ld.presented->charge = scope.take();
    ld.out.dataset = std::move(ld.presented);
    return std::move(ld.out);
}

}  // namespace ncafs::agg
