#include "aggregation/check/cf_validation.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "aggregation/terms/text_attribute.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "codecs/error.hpp"

namespace ncafs::agg {

namespace {

std::vector<double> read_all_as_double(const ArraySource& s) {
    const uint64_t n = s.element_count();
    std::vector<uint8_t> raw(n * type_size(s.type()));
    std::vector<uint64_t> start(s.shape().size(), 0);
    s.read(start, s.shape(), ByteOrder::Native, raw.data());
    std::vector<double> out(n);
    for (uint64_t i = 0; i < n; ++i) out[i] = element_as_double(s.type(), raw.data(), i);
    return out;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

std::string number(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
}

}  // namespace

bool has_cf_aggregation_variables(const Dataset& file) {
    for (const auto& v : file.variables)
        if (is_cf_aggregation_variable(v)) return true;
    return false;
}

std::vector<std::string> check_tiling(const Aggregate& a) {
    std::vector<std::string> out;
    try {
        FragmentGrid grid(a);  // throws on overlap
    } catch (const Error& e) {
        out.push_back(e.what());
        return out;
    }
    for (size_t i = 0; i < a.fragments.size(); ++i)
        for (size_t d = 0; d < a.shape.size(); ++d)
            if (a.fragments.start(i, d) + a.fragments.count(i, d) > a.shape[d])
                out.push_back(a.file + ": " + a.fragments.where(i) + " reaches beyond " + a.dims[d] + " (length " +
                              std::to_string(a.shape[d]) + ")");
    const uint64_t total = a.element_count(), covered = a.covered_elements();
    if (out.empty() && covered != total)
        out.push_back(a.file + ": " + a.name + ": fragments cover " + std::to_string(covered) + " of " +
                      std::to_string(total) + " elements (gaps read as fill)");
    return out;
}

std::vector<std::string> verify_fragment_coordinates(const CfAggregate& ca, size_t dim, const std::string& coordinate_name,
                                                     const std::vector<double>& master, const std::string& units,
                                                     const std::string& calendar, DatasetCache& cache) {
    std::vector<std::string> out;
    const Aggregate& a = ca.aggregate;
    // A master coordinate built from misordered fragments is no longer monotonic.
    if (master.size() > 2) {
        const bool up = master[1] > master[0];
        for (size_t k = 1; k < master.size(); ++k)
            if ((up && !(master[k] > master[k - 1])) || (!up && !(master[k] < master[k - 1]))) {
                out.push_back(a.file + ": coordinate " + coordinate_name + " of " + a.name + " is not monotonic at index " +
                              std::to_string(k) + " (" + number(master[k - 1]) + ", " + number(master[k]) +
                              "): fragments out of order?");
                break;
            }
    }
    for (size_t i = 0; i < a.fragments.size(); ++i) {
        const Fragment& f = a.fragments[i];
        if (f.kind != FragmentKind::File && f.kind != FragmentKind::Self) continue;
        if (i < ca.fragment_problems.size() && !ca.fragment_problems[i].empty()) continue;  // reported elsewhere
        std::shared_ptr<const Dataset> ds;
        try {
            ds = cache.get(f.path);
        } catch (const Error&) {
            continue;  // the fragment check reports it
        }
        const Variable* c = ds->find_variable(coordinate_name);
        if (f.kind == FragmentKind::Self || !c || !c->source || c->source->shape().size() != 1) continue;
        const uint64_t n = c->source->shape()[0];
        if (n != f.count[dim]) {
            out.push_back(f.path + ": coordinate " + coordinate_name + " has " + std::to_string(n) + " values but the fragment spans " +
                          std::to_string(f.count[dim]) + " (" + f.where + ")");
            continue;
        }
        std::vector<double> v;
        try {
            v = read_all_as_double(*c->source);
            std::string fu = text_attribute(*c, "units"), fc = text_attribute(*c, "calendar");
            Affine conv = units_converter(fu, fc.empty() ? calendar : fc, units, calendar);
            for (double& x : v) x = conv.scale * x + conv.offset;
        } catch (const std::exception& e) {
            out.push_back(f.path + ": coordinate " + coordinate_name + ": " + e.what() + " (" + f.where + ")");
            continue;
        }
        bool same = true;
        for (uint64_t k = 0; k < n && same; ++k) same = close(v[k], master[f.start[dim] + k]);
        if (same) continue;
        std::string where = "matches no place of the aggregation's coordinate";
        for (size_t j = 0; j + n <= master.size(); ++j) {
            bool all = true;
            for (uint64_t k = 0; k < n && all; ++k) all = close(v[k], master[j + k]);
            if (all) {
                where = "belongs at " + coordinate_name + "[" + std::to_string(j) + ":" + std::to_string(j + n) + "]";
                break;
            }
        }
        out.push_back(f.path + ": fragment placed at " + coordinate_name + "[" + std::to_string(f.start[dim]) + ":" +
                      std::to_string(f.start[dim] + n) + "] holds " + coordinate_name + " = " + number(v[0]) +
                      (n > 1 ? ".." + number(v[n - 1]) : "") + ", which " + where + ": fragments out of order (" +
                      f.where + ")");
    }
    return out;
}

CfCheckReport check_cf_aggregation(const std::string& path, const AggregationOptions& options, DatasetCache& cache,
                                   bool verify_coordinates) {
    CfCheckReport report;
    std::shared_ptr<const PathPolicy> paths;
    std::shared_ptr<const Dataset> file;
    CfAggregations parsed;
    try {
        paths = std::make_shared<const PathPolicy>(path, options.allowed_roots, options.path_rewrites,
                                                     options.missing_partitions, options.roots_rule);
        file = cache.get(paths->aggregation_file(), {}, paths->confinement_of_aggregation_file());
        parsed = parse_cf_file(paths->aggregation_file(), *file, *paths, options.limits);
    } catch (const std::exception& e) {
        report.problems.push_back(e.what());
        return report;
    }
    for (const auto& w : parsed.warnings) report.warnings.push_back(paths->aggregation_file() + ": " + w);

    struct Checked {
        std::shared_ptr<const CfAggregate> cf;
        std::shared_ptr<const AggregatedSource> source;
    };
    std::map<std::string, Checked> sources;
    for (auto& ca : parsed.aggregates) {
        ++report.aggregates;
        auto shared = std::make_shared<const CfAggregate>(std::move(ca));
        const Aggregate& a = shared->aggregate;
        auto tiling = check_tiling(a);
        report.problems.insert(report.problems.end(), tiling.begin(), tiling.end());
        if (!tiling.empty()) continue;
        auto source = make_cf_source(*shared, paths, cache);
        sources[a.name] = Checked{shared, source};
        for (size_t i = 0; i < a.fragments.size(); ++i) {
            ++report.fragments;
            const Fragment& f = a.fragments[i];
            if (f.kind != FragmentKind::File && f.kind != FragmentKind::Self) {
                if (!shared->fragment_problems[i].empty())
                    report.problems.push_back(f.path + ": " + shared->fragment_problems[i] + " (" + f.where + ")");
                continue;
            }
            try {
                ++report.fragments_opened;
                if (auto filled = source->verify_fragment(i)) report.problems.push_back(*filled);
            } catch (const std::exception& e) {
                report.problems.push_back(e.what());
            }
        }
    }
    if (!verify_coordinates) return report;

    for (const auto& [name, checked] : sources) {
        const CfAggregate& ca = *checked.cf;
        const Aggregate& a = ca.aggregate;
        for (size_t d = 0; d < a.dims.size(); ++d) {
            const std::string& dim = a.dims[d];
            if (dim == a.name) continue;  // the coordinate itself
            // The coordinate variable: an aggregation coordinate variable or a non-aggregated one.
            std::shared_ptr<const ArraySource> coord;
            std::string units, calendar;
            if (auto it = sources.find(dim); it != sources.end() && it->second.source->aggregate().dims.size() == 1) {
                coord = it->second.source;
                units = it->second.source->aggregate().units;
                calendar = it->second.source->aggregate().calendar;
            } else if (const Variable* v = file->find_variable(dim);
                       v && v->source && v->dimids.size() == 1 && file->dimensions[v->dimids[0]].name == dim) {
                coord = v->source;
                units = text_attribute(*v, "units");
                calendar = text_attribute(*v, "calendar");
            }
            if (!coord || coord->shape().size() != 1 || coord->shape()[0] != a.shape[d]) continue;
            try {
                auto values = read_all_as_double(*coord);
                auto found = verify_fragment_coordinates(ca, d, dim, values, units, calendar, cache);
                report.problems.insert(report.problems.end(), found.begin(), found.end());
            } catch (const std::exception& e) {
                report.problems.push_back(std::string(e.what()));
            }
        }
    }
    return report;
}

}  // namespace ncafs::agg
