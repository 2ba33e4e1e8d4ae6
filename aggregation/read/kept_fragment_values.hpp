// The values of small fragments read while another variable's fragment had
// their file open (aggregation/read/sibling_sources.hpp), or read whole when
// a request wanted only part of them (a computed block's edge cuts a row)
// or when opened ahead for a series, kept until the variable's next read
// asks for them: one open of the file serves both. Kept in pages of kPageFragments consecutive fragments (their
// values back to back: a partition of 2x2 floats costs 16 bytes and a bit),
// least recently used pages dropped beyond kBudgetBytes. A page serves only
// under the DatasetCache generation its values were read in (a partition
// renamed over, replaced or rewritten bumps it, as it drops the computed
// blocks of the views). Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

class KeptFragmentValues {
public:
    // Fragments of at most this many bytes (in the master type) are kept.
    static constexpr size_t kMaxBytes = 32;
    static constexpr size_t kPageFragments = 4096;
    // The values one variable keeps, at most: a `cat` of a view reads a
    // coordinate of one value a fragment first (every partition opened for
    // it), then the data variables: 262,144 partitions of 16 bytes.
    static constexpr size_t kBudgetBytes = size_t{4} << 20;

    // Keeps fragment's values (its whole box, C order, master type, native
    // byte order); none of more than kMaxBytes, nor of another size than
    // the fragments kept in its page under the same generation.
    void keep(size_t fragment, uint64_t generation, std::span<const uint8_t> values);
    // The values kept for fragment under generation into out; false when none are.
    bool find(size_t fragment, uint64_t generation, std::vector<uint8_t>& out);
    bool has(size_t fragment, uint64_t generation);

private:
    struct Page {
        uint64_t generation = 0;
        size_t fragment_bytes = 0;   // of every fragment kept in the page
        std::vector<uint8_t> bytes;  // kPageFragments * fragment_bytes
        std::vector<bool> kept;      // kPageFragments
    };
    struct PageWeight {
        size_t operator()(const std::shared_ptr<Page>& page) const { return page->bytes.size(); }
    };
    // The page of fragment under generation, when it holds it; else null.
    std::shared_ptr<Page> page_holding(size_t fragment, uint64_t generation) NCAFS_REQUIRES(mutex_);
    Mutex mutex_;
    LruCache<size_t, std::shared_ptr<Page>, std::hash<size_t>, PageWeight> pages_ NCAFS_GUARDED_BY(mutex_){kBudgetBytes};
    // pages_.size(), read without the lock: a variable that keeps nothing
    // (most) asks for every fragment it reads.
    std::atomic<size_t> pages_held_{0};
};

}  // namespace ncafs::agg
