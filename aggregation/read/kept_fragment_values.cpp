#include "aggregation/read/kept_fragment_values.hpp"

#include <algorithm>

namespace ncafs::agg {

void KeptFragmentValues::keep(size_t fragment, uint64_t generation, std::span<const uint8_t> values) {
    if (values.size() > kMaxBytes) return;
    Entry entry{generation, static_cast<uint8_t>(values.size()), {}};
    std::copy(values.begin(), values.end(), entry.bytes.begin());
    MutexLock lock(mutex_);
    entries_.put(fragment, entry);
}

bool KeptFragmentValues::find(size_t fragment, uint64_t generation, std::vector<uint8_t>& out) {
    MutexLock lock(mutex_);
    auto hit = entries_.get(fragment);
    if (!hit || hit->generation != generation) return false;
    out.assign(hit->bytes.begin(), hit->bytes.begin() + hit->size);
    return true;
}

bool KeptFragmentValues::has(size_t fragment, uint64_t generation) {
    MutexLock lock(mutex_);
    auto hit = entries_.get(fragment);
    return hit && hit->generation == generation;
}

}  // namespace ncafs::agg
