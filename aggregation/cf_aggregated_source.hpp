// The values of a G3-G5 aggregation variable. These generations leave two
// things to the fragment file that G1/G2 wrote into the JSON: the fragment's
// units (and calendar) and which of its axes are the aggregated dimensions
// (fragments may omit size-1 dimensions, CF-1.13 2.8.2). So each fragment is
// resolved lazily, at its first read: its header is opened through the
// dataset cache, its axes aligned greedily (section 5), its units converted
// with UDUNITS-2 (reference-time units with equal calendars; own date
// arithmetic for non-standard calendars), and the read itself goes through
// AggregatedSource's transform pipeline (mask, unpack, units, cast) on a
// one-fragment aggregate. Constructing opens nothing; thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aggregation/aggregated_source.hpp"
#include "aggregation/cf_aggregation_parser.hpp"
#include "aggregation/dataset_cache.hpp"
#include "aggregation/partition_grid.hpp"
#include "aggregation/path_policy.hpp"
#include "codecs/array_source.hpp"

namespace ncafs::agg {

class CfAggregatedSource final : public ArraySource {
public:
    // Throws AggregationError when fragments overlap.
    CfAggregatedSource(std::shared_ptr<const CfAggregate> aggregate, std::shared_ptr<const PathPolicy> paths,
                       DatasetCache& cache);

    NcType type() const override { return agg_->aggregate.type; }
    const std::vector<uint64_t>& shape() const override { return agg_->aggregate.shape; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override;

    const Aggregate& aggregate() const { return agg_->aggregate; }
    const CfAggregate& cf_aggregate() const { return *agg_; }
    // Opens fragment i and checks it (location, variable, alignment, units,
    // type); throws SourceError naming the file and the reason. No-op for
    // constant and missing fragments.
    void verify_fragment(size_t i) const;
    // The fully resolved one-fragment aggregate of fragment i (after verify),
    // for tests and the check command.
    std::shared_ptr<const Aggregate> resolved_fragment(size_t i) const;

private:
    struct Piece;
    std::shared_ptr<const Piece> resolve(size_t i) const;

    std::shared_ptr<const CfAggregate> agg_;
    std::shared_ptr<const PathPolicy> paths_;
    DatasetCache& cache_;
    PartitionGrid grid_;
    mutable std::mutex mutex_;  // guards pieces_ only
    mutable std::vector<std::shared_ptr<const Piece>> pieces_;
};

// Greedy alignment of a fragment's axes to its box (section 5): walk both
// lists; equal sizes pair; a box size of 1 with no partner is a missing
// size-1 dimension. Returns the master dim of each fragment axis, or throws
// std::runtime_error with the reason (more axes than the box, sizes differ).
std::vector<int> align_fragment_axes(const std::vector<uint64_t>& fragment_shape, const std::vector<uint64_t>& box);

}  // namespace ncafs::agg
