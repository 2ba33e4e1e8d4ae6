#include "aggregation/read/dataset_files.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/reference_set/reference_dataset.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

namespace {

const Aggregate* aggregate_of(const ArraySource* source) {
    if (auto* s = dynamic_cast<const AggregatedSource*>(source)) return &s->aggregate();
    return nullptr;
}

}  // namespace

bool draws_on_remote_objects(const ArraySource& source) {
    // By the table's columns: a whole Fragment per partition (start, count,
    // the `where` text) would cost a million of them for two fields.
    if (const Aggregate* aggregate = aggregate_of(&source)) {
        const FragmentTable& table = aggregate->fragments;
        for (size_t i = 0; i < table.size(); ++i)
            if (table.kind(i) == FragmentKind::File && remote::is_remote_url(table.path(i))) return true;
    }
    return reference_names_remote(source);
}

bool draws_on_remote_objects(const Dataset& dataset) {
    for (const auto& variable : dataset.variables)
        if (variable.source && draws_on_remote_objects(*variable.source)) return true;
    return false;
}

namespace {

// Drops the repeats of a list, keeping each path's first place. By sorted
// (hash, place) pairs, 16 bytes a path, rather than a set of strings (a
// million partition paths); equal hashes are told apart by the paths themselves.
void drop_repeats(std::vector<std::string>& files) {
    std::vector<std::pair<size_t, size_t>> keyed(files.size());  // (hash, place)
    for (size_t i = 0; i < files.size(); ++i) keyed[i] = {std::hash<std::string>{}(files[i]), i};
    std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        if (int c = files[a.second].compare(files[b.second]); c != 0) return c < 0;
        return a.second < b.second;
    });
    std::vector<bool> repeat(files.size(), false);
    for (size_t k = 1; k < keyed.size(); ++k)  // equal paths are neighbours, the first place first
        if (keyed[k].first == keyed[k - 1].first && files[keyed[k].second] == files[keyed[k - 1].second])
            repeat[keyed[k].second] = true;
    size_t kept = 0;
    for (size_t i = 0; i < files.size(); ++i) {
        if (repeat[i]) continue;
        if (kept != i) files[kept] = std::move(files[i]);  // never onto itself: a self-moved string empties
        ++kept;
    }
    files.resize(kept);
}

}  // namespace

std::vector<std::string> files_drawn_on(const Dataset& dataset) {
    std::vector<std::string> files;
    if (!dataset.origin.empty()) files.push_back(dataset.origin);
    std::vector<const FragmentTable*> listed;  // tables whose files are in `files`
    for (const auto& variable : dataset.variables) {
        if (variable.source)
            for (auto& file : reference_files_of(*variable.source)) files.push_back(std::move(file));
        const Aggregate* aggregate = aggregate_of(variable.source.get());
        if (!aggregate) continue;
        const FragmentTable& table = aggregate->fragments;
        // The variables of a CF-1.13 file name the same files, fragment by
        // fragment: each list once (no path built, nothing more to sort).
        if (std::any_of(listed.begin(), listed.end(), [&](const FragmentTable* t) { return table.same_paths(*t); }))
            continue;
        listed.push_back(&table);
        files.reserve(files.size() + table.size());
        for (size_t i = 0; i < table.size(); ++i)
            if (table.kind(i) == FragmentKind::File) {
                std::string path = table.path(i);
                if (!path.empty() && !remote::is_remote_url(path)) files.push_back(std::move(path));
            }
    }
    drop_repeats(files);
    return files;
}

}  // namespace ncafs::agg
