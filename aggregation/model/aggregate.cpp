#include "aggregation/model/aggregate.hpp"

#include <algorithm>

#include "aggregation/model/error.hpp"
#include "codecs/checked_math.hpp"

namespace ncafs::agg {

uint64_t IndexSelection::min_index() const {
    if (is_list) return list.empty() ? 0 : *std::min_element(list.begin(), list.end());
    if (count == 0) return 0;
    return step >= 0 ? at(0) : at(count - 1);
}

uint64_t IndexSelection::max_index() const {
    if (is_list) return list.empty() ? 0 : *std::max_element(list.begin(), list.end());
    if (count == 0) return 0;
    return step >= 0 ? at(count - 1) : at(0);
}

uint64_t Fragment::element_count() const {
    return ncafs::element_count(count);  // boxes lie inside the master, whose count was checked
}

bool Fragment::transform_is_identity() const {
    if (axis_to_master.size() != count.size()) return false;
    for (size_t k = 0; k < axis_to_master.size(); ++k)
        if (axis_to_master[k] != static_cast<int>(k)) return false;
    for (bool r : reverse)
        if (r) return false;
    for (const auto& p : part)
        if (p) return false;
    return true;
}

uint64_t Aggregate::element_count() const {
    for (uint64_t s : shape)
        if (s == 0) return 0;
    uint64_t n = 1;
    for (uint64_t s : shape)
        n = checked::mul_or_throw(n, s, [&](const std::string& r) -> void {
            throw AggregationError(file, name, "the aggregated shape has too many elements (" + r + ")");
        });
    return n;
}

uint64_t Aggregate::covered_elements() const {
    uint64_t n = 0;
    for (size_t i = 0; i < fragments.size(); ++i) n += fragments.element_count(i);
    return n;
}

}  // namespace ncafs::agg
