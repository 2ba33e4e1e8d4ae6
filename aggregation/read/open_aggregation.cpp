#include "aggregation/read/open_aggregation.hpp"

#include <fcntl.h>
#include <netcdf.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>
#include <mutex>
#include <sstream>

#include "aggregation/read/partitioned_source.hpp"
#include "aggregation/terms/cf_fragment_source.hpp"
#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/json/nca_parser.hpp"
#include "aggregation/read/path_policy.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/sniff.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs {

bool is_aggregation_file(const std::string& path, const ConfinedRoots* within) {
    // O_NONBLOCK, regular files only, confined when asked; then only this fd.
    OpenResult opened = open_regular_file(path, within);
    if (!opened.fd || !is_netcdf_format(sniff_fd(opened.fd.get()))) return false;
    const std::string name = "/proc/self/fd/" + std::to_string(opened.fd.get());
    {  // a classic header our own reader rejects never reaches netcdf-c
        int copy = ::dup(opened.fd.get());
        if (copy < 0) return false;
        cdf::check_classic_header(*OpenFile::adopt(copy, path));  // throws FormatError naming the file
    }
    std::lock_guard lock(netcdf_library_mutex());
    int ncid = -1;
    if (nc_open(name.c_str(), NC_NOWRITE, &ncid) != NC_NOERR) return false;
    int nvars = 0;
    bool found = false;
    if (nc_inq_nvars(ncid, &nvars) == NC_NOERR) {
        std::vector<int> ids(static_cast<size_t>(nvars > 0 ? nvars : 0));
        if (nvars > 0 && nc_inq_varids(ncid, &nvars, ids.data()) == NC_NOERR)
            for (int id : ids) {
                nc_type t;
                size_t len;
                if (nc_inq_att(ncid, id, "nca_array", &t, &len) == NC_NOERR ||
                    nc_inq_att(ncid, id, "cfa_array", &t, &len) == NC_NOERR ||
                    (nc_inq_att(ncid, id, "aggregated_dimensions", &t, &len) == NC_NOERR &&
                     nc_inq_att(ncid, id, "aggregated_data", &t, &len) == NC_NOERR)) {
                    found = true;
                    break;
                }
            }
    }
    nc_close(ncid);
    return found;
}

std::shared_ptr<const Dataset> open_aggregation(const std::string& path, const AggregationOptions& options) {
    return agg::load_aggregation(path, options, agg::DatasetCache::shared()).dataset;
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

LoadedAggregation load_aggregation(const std::string& path, const AggregationOptions& options, DatasetCache& cache) {
    auto paths = std::make_shared<const PathPolicy>(path, options.allowed_roots, options.path_rewrites);
    // The aggregation file itself (header only for now) through the same cache.
    auto file = cache.get(paths->aggregation_file(), {}, paths->confinement_of_aggregation_file());

    LoadedAggregation out;
    auto presented = std::make_shared<Dataset>();
    presented->origin = paths->aggregation_file();

    // Which dimensions stay: those of every visible variable and every master.
    std::vector<bool> keep_dim(file->dimensions.size(), false);
    std::vector<const Variable*> visible;
    std::vector<Aggregate> aggregates;
    std::vector<bool> is_master;
    // G3-G5 (CFA-0.6.x, CF drafts, CF-1.13): term-variable aggregations.
    CfAggregations cf;
    std::map<std::string, size_t> cf_index;
    std::set<std::string> cf_hidden_vars, cf_hidden_dims;
    bool any_cf = false;
    for (const auto& v : file->variables) any_cf |= is_cf_aggregation_variable(v);
    if (any_cf) {
        cf = parse_cf_file(paths->aggregation_file(), *file, *paths, options.limits);
        for (size_t i = 0; i < cf.aggregates.size(); ++i) cf_index[cf.aggregates[i].aggregate.name] = i;
        cf_hidden_vars.insert(cf.hidden_variables.begin(), cf.hidden_variables.end());
        cf_hidden_dims.insert(cf.hidden_dimensions.begin(), cf.hidden_dimensions.end());
        for (const auto& w : cf.warnings) out.warnings.push_back(paths->aggregation_file() + ": " + w);
    }
    for (const auto& v : file->variables) {
        if (cf_hidden_vars.count(v.name)) {
            ++out.hidden_variables;
            continue;
        }
        if (cf_index.count(v.name)) {
            for (const auto& d : cf.aggregates[cf_index[v.name]].aggregate.dims) keep_dim[*file->find_dimension(d)] = true;
            is_master.push_back(false);
            visible.push_back(&v);
            continue;
        }
        if (is_nca_private(v)) {
            ++out.hidden_variables;
            continue;
        }
        if (nca_generation(v)) {
            Aggregate a = parse_nca_variable(*file, v, *paths, options.limits);
            for (const auto& d : a.dims) keep_dim[*file->find_dimension(d)] = true;
            aggregates.push_back(std::move(a));
            is_master.push_back(true);
        } else {
            for (size_t id : v.dimids) keep_dim[id] = true;
            is_master.push_back(false);
        }
        visible.push_back(&v);
    }
    // Dimensions no variable uses at all stay (they are part of the file);
    // only those used solely by private variables are hidden.
    std::vector<bool> used_by_private(file->dimensions.size(), false);
    for (const auto& v : file->variables)
        if (is_nca_private(v))
            for (size_t id : v.dimids) used_by_private[id] = true;
    std::vector<size_t> new_id(file->dimensions.size(), SIZE_MAX);
    for (size_t d = 0; d < file->dimensions.size(); ++d) {
        if (!keep_dim[d] && (used_by_private[d] || cf_hidden_dims.count(file->dimensions[d].name))) {
            ++out.hidden_dimensions;
            continue;
        }
        new_id[d] = presented->dimensions.size();
        presented->dimensions.push_back(file->dimensions[d]);
    }
    // G3-G5 shapes come from the fragment sizes (cf-python bug #689: a dimension
    // written with length 0); the parser warned where they disagree.
    for (const auto& ca : cf.aggregates)
        for (size_t k = 0; k < ca.aggregate.dims.size(); ++k)
            presented->dimensions[new_id[*file->find_dimension(ca.aggregate.dims[k])]].length = ca.aggregate.shape[k];

    const Attribute* fragment_conventions = file->find_attribute(kFragmentConventions);
    for (const auto& a : file->attributes) {
        if (a.name == "Conventions" && a.type == NcType::Char) {
            if (fragment_conventions) {
                presented->attributes.push_back(Attribute::text("Conventions", fragment_conventions->as_text()));
                continue;
            }
            std::string c = conventions_without_aggregation(a.as_text());
            if (!c.empty()) presented->attributes.push_back(Attribute::text("Conventions", c));
            continue;
        }
        if (a.name != kFragmentConventions) presented->attributes.push_back(a);
    }

    size_t next_master = 0;
    for (size_t i = 0; i < visible.size(); ++i) {
        const Variable& v = *visible[i];
        if (auto it = cf_index.find(v.name); it != cf_index.end()) {
            auto source = make_cf_source(cf.aggregates[it->second], paths, cache);
            const Aggregate& ca = source->aggregate();
            Variable m;
            m.name = ca.name;
            m.type = ca.type;
            for (const auto& d : ca.dims) m.dimids.push_back(new_id[*file->find_dimension(d)]);
            m.attributes = ca.attributes;
            m.source = source;
            out.cf_sources.push_back(source);
            presented->variables.push_back(std::move(m));
            continue;
        }
        if (!is_master[i]) {
            Variable copy = v;
            for (auto& id : copy.dimids) id = new_id[id];
            presented->variables.push_back(std::move(copy));
            continue;
        }
        auto agg = std::make_shared<const Aggregate>(std::move(aggregates[next_master++]));
        for (const auto& w : agg->warnings) out.warnings.push_back(paths->aggregation_file() + ": " + w);
        auto source = std::make_shared<const AggregatedSource>(agg, paths, cache);
        Variable m;
        m.name = agg->name;
        m.type = agg->type;
        for (const auto& d : agg->dims) m.dimids.push_back(new_id[*file->find_dimension(d)]);
        m.attributes = agg->attributes;
        m.source = source;
        out.sources.push_back(source);
        presented->variables.push_back(std::move(m));
    }
    out.dataset = std::move(presented);
    return out;
}

}  // namespace ncafs::agg
