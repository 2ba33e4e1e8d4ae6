#include "aggregation/fragment_presence.hpp"

#include <unistd.h>

#include <set>

#include "aggregation/aggregated_source.hpp"
#include "aggregation/cf_aggregated_source.hpp"

namespace ncafs::agg {

namespace {

const Aggregate* aggregate_of(const ArraySource* source) {
    if (auto* nca = dynamic_cast<const AggregatedSource*>(source)) return &nca->aggregate();
    if (auto* cf = dynamic_cast<const CfAggregatedSource*>(source)) return &cf->aggregate();
    return nullptr;
}

}  // namespace

std::optional<std::string> first_absent_fragment_file(const Dataset& ds) {
    std::set<std::string> checked;
    for (const auto& v : ds.variables) {
        const Aggregate* a = aggregate_of(v.source.get());
        if (!a) continue;
        for (const auto& f : a->fragments) {
            if (f.kind != FragmentKind::File || !checked.insert(f.path).second) continue;
            if (::access(f.path.c_str(), R_OK) != 0) return f.path;
        }
    }
    return std::nullopt;
}

}  // namespace ncafs::agg
