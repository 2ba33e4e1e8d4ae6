#include "aggregation/read/sibling_sources.hpp"

namespace ncafs::agg {

void SiblingSources::add(const std::shared_ptr<const AggregatedSource>& source) {
    MutexLock lock(mutex_);
    sources_.push_back(source);
}

std::vector<std::shared_ptr<const AggregatedSource>> SiblingSources::others(const AggregatedSource* self) const {
    std::vector<std::shared_ptr<const AggregatedSource>> out;
    MutexLock lock(mutex_);
    for (const auto& weak : sources_)
        if (auto source = weak.lock(); source && source.get() != self) out.push_back(std::move(source));
    return out;
}

}  // namespace ncafs::agg
