// The values of a master array: a read of any hyperslab splits, through the
// partition grid, into one piece per fragment touched; each piece is read
// from its fragment's source and conformed (mask, unpack, units, reversal,
// permutation, size-1 axes, part, cast to the master type). Uncovered cells
// read as the master's fill. Fragments are opened lazily, through the
// dataset cache, at their first read; constructing opens nothing. The source
// holds no dataset between reads: the bounded cache alone decides how long
// a file stays open. Every convention family reads through this class; a
// family that completes fragments from their files gives a resolver.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/model/fragment_resolver.hpp"
#include "aggregation/model/partition_grid.hpp"
#include "aggregation/model/partition_model.hpp"
#include "aggregation/read/path_policy.hpp"
#include "codecs/array_source.hpp"

namespace ncafs::agg {

class AggregatedSource final : public ArraySource {
public:
    // Throws AggregationError when fragments overlap. `resolver` (may be
    // null) completes each fragment from its opened file.
    AggregatedSource(std::shared_ptr<const Aggregate> aggregate, std::shared_ptr<const PathPolicy> paths,
                     DatasetCache& cache, std::shared_ptr<const FragmentResolver> resolver = nullptr);
    ~AggregatedSource() override;

    NcType type() const override { return agg_->type; }
    const std::vector<uint64_t>& shape() const override { return agg_->shape; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    // Passes through the fragment source's extents when the run lies inside
    // one fragment that needs no conversion at all (the splice fast path).
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override;
    // From the partition grid: the box lies only in constant fragments of one
    // value and/or missing fragments and uncovered cells (the master fill).
    std::optional<std::vector<uint8_t>> uniform_value(std::span<const uint64_t> start,
                                                      std::span<const uint64_t> count) const override;

    const Aggregate& aggregate() const { return *agg_; }
    const PartitionGrid& grid() const { return grid_; }
    // Opens fragment i and checks it against the metadata (allowed root,
    // variable, shape, type); throws SourceError naming the file and reason.
    // Constant and missing fragments: only the resolver's declared check.
    void verify_fragment(size_t i) const;
    // True when fragment i would be read as a plain copy (after verify).
    bool fragment_is_plain(size_t i) const;

    struct Resolved;

private:
    // keep receives the fragment's dataset: hold it while using the result.
    std::shared_ptr<const Resolved> resolve(size_t i, std::shared_ptr<const Dataset>& keep) const;
    // The checks and conversions of fragment f against its opened variable.
    void conform(const Fragment& f, const std::shared_ptr<const Dataset>& ds, Resolved* r) const;
    // Raises what the resolver knows from the metadata alone about fragment i.
    void check_declared(size_t i) const;
    [[noreturn]] void reject(const Fragment& f, const std::string& reason) const;
    void read_piece(const Fragment& f, const Resolved& r, const std::vector<uint64_t>& lo,
                    const std::vector<uint64_t>& len, void* dst) const;

    std::shared_ptr<const Aggregate> agg_;
    std::shared_ptr<const PathPolicy> paths_;
    DatasetCache& cache_;
    std::shared_ptr<const FragmentResolver> resolver_;
    PartitionGrid grid_;
    mutable std::mutex mutex_;  // guards resolved_ only
    mutable std::vector<std::shared_ptr<const Resolved>> resolved_;
};

}  // namespace ncafs::agg
