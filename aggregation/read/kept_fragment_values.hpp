// The values of small fragments read while another variable's fragment had
// their file open (aggregation/read/sibling_sources.hpp), or read whole when
// a request wanted only part of them (a computed block's edge cuts a row),
// kept until the variable's next read asks for them: one open of the file
// serves both.
// Bounded (kCapacity fragments of at most kMaxBytes each, held inline, least
// recently used dropped: about 110 bytes an entry); an entry serves only
// under the DatasetCache generation it was read in (a partition renamed
// over, replaced or rewritten bumps it, as it drops the computed blocks of
// the views). Thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

class KeptFragmentValues {
public:
    // Fragments of at most this many bytes (in the master type) are kept.
    static constexpr size_t kMaxBytes = 32;
    // Two 64 KiB blocks of one-value (8-byte) fragments: what a view's
    // first computed block, and the block where the next variable begins,
    // hold of a coordinate of one value a fragment.
    static constexpr size_t kCapacity = 16384;

    // Keeps fragment's values (its whole box, C order, master type, native
    // byte order); more than kMaxBytes are not kept.
    void keep(size_t fragment, uint64_t generation, std::span<const uint8_t> values);
    // The values kept for fragment under generation into out; false when none are.
    bool find(size_t fragment, uint64_t generation, std::vector<uint8_t>& out);
    bool has(size_t fragment, uint64_t generation);

private:
    struct Entry {
        uint64_t generation = 0;
        uint8_t size = 0;
        std::array<uint8_t, kMaxBytes> bytes{};
    };
    Mutex mutex_;
    LruCache<size_t, Entry> entries_ NCAFS_GUARDED_BY(mutex_){kCapacity};
};

}  // namespace ncafs::agg
