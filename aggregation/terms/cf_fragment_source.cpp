#include "aggregation/terms/cf_fragment_source.hpp"

#include <stdexcept>

#include "aggregation/terms/text_attribute.hpp"
#include "aggregation/model/units_conversion.hpp"
#include "codecs/error.hpp"
#include "aggregation/model/shape_text.hpp"

namespace ncafs::agg {

namespace {

bool is_packed(const Aggregate& a) {
    for (const auto& at : a.attributes)
        if (at.name == "scale_factor" || at.name == "add_offset") return true;
    return false;
}

}  // namespace

std::vector<int> align_fragment_axes(const std::vector<uint64_t>& fragment_shape, const std::vector<uint64_t>& box) {
    if (fragment_shape.size() > box.size())
        throw std::runtime_error("has " + std::to_string(fragment_shape.size()) + " dimensions " +
                                 shape_text(fragment_shape, '(', ')') + ", more than the " + std::to_string(box.size()) +
                                 " aggregated dimensions " + shape_text(box, '(', ')'));
    std::vector<int> axis_to_master;
    axis_to_master.reserve(fragment_shape.size());  // one allocation: asked for every fragment opened
    size_t k = 0;
    for (size_t d = 0; d < box.size(); ++d) {
        if (k < fragment_shape.size() && fragment_shape[k] == box[d]) {
            axis_to_master.push_back(static_cast<int>(d));
            ++k;
        } else if (box[d] != 1) {
            throw std::runtime_error("has shape " + shape_text(fragment_shape, '(', ')') + " but its place in the aggregation is " +
                                     shape_text(box, '(', ')') + " (only size-1 dimensions may be omitted)");
        }
    }
    if (k != fragment_shape.size())
        throw std::runtime_error("has shape " + shape_text(fragment_shape, '(', ')') + " but its place in the aggregation is " +
                                 shape_text(box, '(', ')'));
    return axis_to_master;
}

void CfFragmentResolver::check_declared(size_t i) const {
    if (i < agg_->fragment_problems.size() && !agg_->fragment_problems[i].empty())
        throw FragmentRejected(agg_->fragment_problems[i]);
}

void CfFragmentResolver::complete(Fragment& f, const Dataset& ds) const {
    const Aggregate& a = agg_->aggregate;
    const std::string& name = f.variable;
    const Variable* var = ds.find_variable(name);
    if (!var) throw FragmentRejected("has no variable \"" + name + "\"");
    if (!var->source) throw FragmentRejected("variable \"" + name + "\" has no readable values");
    try {
        f.axis_to_master = align_fragment_axes(var->source->shape(), f.count);
    } catch (const std::exception& e) {
        throw FragmentRejected("variable \"" + name + "\" " + e.what());
    }
    // Units: none on the fragment means the aggregation's (CFA-0.6.2 3.4); a
    // fragment without a calendar is taken to use the aggregation's calendar.
    std::string fu = text_attribute(*var, "units"), fc = text_attribute(*var, "calendar");
    if (fu.empty())  // CF 7.1: boundary variables inherit their parent coordinate's units and calendar
        for (const auto& parent : ds.variables)
            if (text_attribute(parent, "bounds") == name) {
                fu = text_attribute(parent, "units");
                if (fc.empty()) fc = text_attribute(parent, "calendar");
                break;
            }
    try {
        f.units = units_converter(fu, fc.empty() ? a.calendar : fc, a.units, a.calendar);
    } catch (const std::exception& e) {
        throw FragmentRejected("variable \"" + name + "\" units: " + e.what());
    }
    f.units_text = fu.empty() ? "" : fu + " -> " + a.units;
    // A7 (docs/conventions/cf-1.13.md): fragment values are the aggregation's
    // raw values; with a packed aggregation variable a units change would act
    // on packed numbers.
    if (!f.units.is_identity() && is_packed(a))
        throw FragmentRejected("variable \"" + name + "\" has units \"" + fu + "\" but the packed aggregation variable has \"" +
                               a.units + "\": converting packed values is refused");
}

std::shared_ptr<const AggregatedSource> make_cf_source(const CfAggregate& aggregate,
                                                       std::shared_ptr<const PathPolicy> paths, DatasetCache& cache) {
    return make_cf_source(CfAggregate(aggregate), std::move(paths), cache);
}

std::shared_ptr<const AggregatedSource> make_cf_source(CfAggregate&& aggregate, std::shared_ptr<const PathPolicy> paths,
                                                       DatasetCache& cache, std::shared_ptr<const SiblingSources> siblings) {
    auto cf = std::make_shared<CfAggregate>(std::move(aggregate));
    // "/temp1" is a root variable; "/aggregation/temp1" lies in a group,
    // opened as a dataset of its own.
    cf->aggregate.fragments.rewrite_transforms([](Fragment& f) {
        std::string& name = f.variable;
        if (name.size() > 1 && name[0] == '/') name = name.substr(1);
        if (auto slash = name.rfind('/'); slash != std::string::npos) {
            f.group = "/" + name.substr(0, slash);
            name = name.substr(slash + 1);
        }
    });
    std::shared_ptr<const CfAggregate> shared = cf;
    std::shared_ptr<const Aggregate> model(shared, &shared->aggregate);  // shares ownership of cf
    return std::make_shared<const AggregatedSource>(model, std::move(paths), cache,
                                                    std::make_shared<const CfFragmentResolver>(shared), std::move(siblings));
}

}  // namespace ncafs::agg
