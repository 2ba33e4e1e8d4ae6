#include "aggregation/read/kept_fragment_values.hpp"

#include <algorithm>

namespace ncafs::agg {

void KeptFragmentValues::keep(size_t fragment, uint64_t generation, std::span<const uint8_t> values) {
    if (values.empty() || values.size() > kMaxBytes) return;
    const size_t slot = fragment % kPageFragments;
    MutexLock lock(mutex_);
    auto page = pages_.get(fragment / kPageFragments).value_or(nullptr);
    if (page && page->generation == generation && page->fragment_bytes != values.size()) return;  // kept as they are
    if (!page || page->generation != generation) {
        page = std::make_shared<Page>();
        page->generation = generation;
        page->fragment_bytes = values.size();
        page->bytes.resize(kPageFragments * values.size());
        page->kept.resize(kPageFragments);
        pages_.put(fragment / kPageFragments, page);  // weighed now: its size never changes
        pages_held_.store(pages_.size(), std::memory_order_relaxed);
    }
    std::copy(values.begin(), values.end(), page->bytes.begin() + static_cast<ptrdiff_t>(slot * values.size()));
    page->kept[slot] = true;
}

std::shared_ptr<KeptFragmentValues::Page> KeptFragmentValues::page_holding(size_t fragment, uint64_t generation) {
    auto page = pages_.get(fragment / kPageFragments).value_or(nullptr);
    if (!page || page->generation != generation || !page->kept[fragment % kPageFragments]) return nullptr;
    return page;
}

bool KeptFragmentValues::find(size_t fragment, uint64_t generation, std::vector<uint8_t>& out) {
    if (pages_held_.load(std::memory_order_relaxed) == 0) return false;
    MutexLock lock(mutex_);
    auto page = page_holding(fragment, generation);
    if (!page) return false;
    auto first = page->bytes.begin() + static_cast<ptrdiff_t>((fragment % kPageFragments) * page->fragment_bytes);
    out.assign(first, first + static_cast<ptrdiff_t>(page->fragment_bytes));
    return true;
}

bool KeptFragmentValues::has(size_t fragment, uint64_t generation) {
    if (pages_held_.load(std::memory_order_relaxed) == 0) return false;
    MutexLock lock(mutex_);
    return page_holding(fragment, generation) != nullptr;
}

}  // namespace ncafs::agg
