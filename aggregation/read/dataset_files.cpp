#include "aggregation/read/dataset_files.hpp"

#include <unordered_set>

#include "aggregation/read/partitioned_source.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

namespace {

const Aggregate* aggregate_of(const ArraySource* source) {
    if (auto* s = dynamic_cast<const AggregatedSource*>(source)) return &s->aggregate();
    return nullptr;
}

}  // namespace

bool draws_on_remote_objects(const Dataset& dataset) {
    for (const auto& variable : dataset.variables)
        if (const Aggregate* aggregate = aggregate_of(variable.source.get()))
            for (const auto& fragment : aggregate->fragments)
                if (fragment.kind == FragmentKind::File && remote::is_remote_url(fragment.path)) return true;
    return false;
}

std::vector<std::string> files_drawn_on(const Dataset& dataset) {
    std::vector<std::string> files;
    std::unordered_set<std::string> seen;
    auto add = [&](const std::string& path) {
        if (!path.empty() && seen.insert(path).second) files.push_back(path);
    };
    add(dataset.origin);
    for (const auto& variable : dataset.variables) {
        const Aggregate* aggregate = aggregate_of(variable.source.get());
        if (!aggregate) continue;
        const PartitionTable& table = aggregate->fragments;
        for (size_t i = 0; i < table.size(); ++i)
            if (table.kind(i) == FragmentKind::File && !remote::is_remote_url(table.path(i))) add(table.path(i));
    }
    return files;
}

}  // namespace ncafs::agg
