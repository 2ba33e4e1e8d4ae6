// The values of a CF-style aggregation variable (CFA-0.6.x, the CF drafts,
// CF-1.13): the one AggregatedSource every family reads through, with the
// CF fragment resolver. These generations leave two things to the fragment
// file that the NCA JSON wrote into the aggregation file: the fragment's
// units (and calendar) and which of its axes are the aggregated dimensions
// (fragments may omit size-1 dimensions, docs/conventions/cf-1.13.md). So
// each fragment is completed lazily, at its first read: its axes aligned
// greedily, its units converted with UDUNITS-2 (reference-time units with
// equal calendars; own date arithmetic for non-standard calendars).
// Constructing opens nothing; datasets are held only by the bounded cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/model/fragment_resolver.hpp"
#include "aggregation/read/path_policy.hpp"

namespace ncafs::agg {

// Completes CF fragments from their files (axes, units) and raises the
// problems the parser recorded (fragment_problems) when one is read.
class CfFragmentResolver final : public FragmentResolver {
public:
    explicit CfFragmentResolver(std::shared_ptr<const CfAggregate> aggregate) : agg_(std::move(aggregate)) {}
    void check_declared(size_t i) const override;
    void complete(Fragment& fragment, const Dataset& dataset) const override;
    std::string label(const Fragment& fragment) const override { return fragment.where; }

private:
    std::shared_ptr<const CfAggregate> agg_;
};

// The reader of one CF aggregation variable. Fragment variables named by a
// path ("/g/temp1") are read from that group. Throws AggregationError when
// fragments overlap.
std::shared_ptr<const AggregatedSource> make_cf_source(const CfAggregate& aggregate,
                                                       std::shared_ptr<const PathPolicy> paths, DatasetCache& cache);
// The same, taking the aggregate over: no copy of its partition table (a
// million fragments: ~60 MB a copy).
// `siblings`: the file's other aggregated variables (read/sibling_sources.hpp).
std::shared_ptr<const AggregatedSource> make_cf_source(CfAggregate&& aggregate, std::shared_ptr<const PathPolicy> paths,
                                                       DatasetCache& cache,
                                                       std::shared_ptr<const SiblingSources> siblings = nullptr);

// Greedy alignment of a fragment's axes to its box (docs/conventions/cf-1.13.md):
// walk both lists; equal sizes pair; a box size of 1 with no partner is a
// missing size-1 dimension. Returns the master dim of each fragment axis, or
// throws std::runtime_error with the reason (more axes than the box, sizes differ).
std::vector<int> align_fragment_axes(const std::vector<uint64_t>& fragment_shape, const std::vector<uint64_t>& box);

}  // namespace ncafs::agg
