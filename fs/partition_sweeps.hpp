// Whether every partition file of an aggregation can be read now, asked at
// each open of one of its views (the answer decides direct I/O, see
// Catalog::absent_partition). The answer is kept per aggregation until a
// partition change is seen (DatasetCache::generation). An aggregation of
// up to kSweepAtOpen partitions is swept at once (one faccessat each); a
// larger one in the background on the kept pool, the open waiting for it
// a quarter of a second at most, so that no open waits for a sweep of a
// million files: until its answer is known its views are served as if a
// partition were missing (direct I/O: a read that meets one fails whole,
// and no page is cached), which is always safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fs/cache_keys.hpp"

namespace ncafs::fs {

class PartitionSweeps {
public:
    static constexpr size_t kSweepAtOpen = 4096;
    // The first partition (of files) that is absent or unreadable, else nullopt.
    using Sweep = std::function<std::optional<std::string>(std::span<const std::string> files)>;
    // Called once with the absent partition a background sweep found.
    using Found = std::function<void(const std::string& absent)>;

    explicit PartitionSweeps(size_t capacity);

    struct Answer {
        bool known = true;            // false: a background sweep is under way (or could not start)
        std::optional<std::string> absent;  // when known: the first absent partition, if any
    };
    // files: the aggregation file first, then its partitions (swept).
    Answer ask(const FileKey& key, uint64_t generation, std::shared_ptr<const std::vector<std::string>> files,
               const Sweep& sweep, const Found& found);

private:
    struct State;
    std::shared_ptr<State> state_;  // shared with background sweeps, which may end after this object
};

}  // namespace ncafs::fs
