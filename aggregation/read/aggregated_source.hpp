// The values of a master array: a read of any hyperslab splits, through the
// partition grid, into one piece per fragment touched; each piece is read
// from its fragment's source and conformed (mask, unpack, units, reversal,
// permutation, size-1 axes, part, cast to the master type). Uncovered cells
// read as the master's fill. Fragments are opened lazily, through the
// dataset cache, at their first read; constructing opens nothing. The source
// holds no dataset between reads: the bounded cache alone decides how long
// a file stays open; only the values of small fragments read along with
// another fragment of their file are kept (kept_fragment_values.hpp), so
// that no file is opened twice for them. Every convention family reads
// through this class; a family that completes fragments from their files
// gives a resolver.
// Which source elements a piece needs, and in what order, is arithmetic
// alone: aggregation/model/fragment_index.hpp.
#pragma once

#include <condition_variable>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/model/fragment_resolver.hpp"
#include "aggregation/model/fragment_grid.hpp"
#include "aggregation/model/aggregate.hpp"
#include "aggregation/read/kept_fragment_values.hpp"
#include "aggregation/read/path_policy.hpp"
#include "aggregation/read/sibling_sources.hpp"
#include "codecs/array_source.hpp"
#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::agg {

class AggregatedSource final : public ArraySource, public std::enable_shared_from_this<AggregatedSource> {
public:
    // Throws AggregationError when fragments overlap. `resolver` (may be
    // null) completes each fragment from its opened file. `siblings` (may
    // be null): the other aggregated variables of the same file, to which a
    // fragment of one value hands the file it opened (sibling_sources.hpp).
    AggregatedSource(std::shared_ptr<const Aggregate> aggregate, std::shared_ptr<const PathPolicy> paths,
                     DatasetCache& cache, std::shared_ptr<const FragmentResolver> resolver = nullptr,
                     std::shared_ptr<const SiblingSources> siblings = nullptr);
    ~AggregatedSource() override;

    NcType type() const override { return agg_->type; }
    const std::vector<uint64_t>& shape() const override { return agg_->shape; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    // Whether reads of one fragment at a time are watched for a series (a
    // point's time series), whose next fragments are then opened ahead
    // (note_read_of). Off for a reader of many runs or fragments known
    // together, which opens them side by side itself (fs/piece_windows.hpp,
    // run_pieces): the same files would be opened twice.
    enum class SeriesWatch { On, Off };
    // Passes through the fragment source's extents when the run lies inside
    // one fragment that needs no conversion at all (the splice fast path).
    // Opens the fragment's file when it is not open: a reader of many runs
    // asks for them side by side (fs/piece_windows.hpp).
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override {
        return big_endian_extents(first, n, SeriesWatch::On);
    }
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n, SeriesWatch series) const;
    // Whether big_endian_extents(first, ...) would open a file now: false
    // when element `first` lies in a partition resolved and still open, or
    // in no partition (worth no thread of its own).
    bool extents_would_open(uint64_t first) const;
    // From the partition grid: the box lies only in constant fragments of one
    // value and/or missing fragments and uncovered cells (the master fill).
    std::optional<std::vector<uint8_t>> uniform_value(std::span<const uint64_t> start,
                                                      std::span<const uint64_t> count) const override;

    // True when some fragment is read from a file (a partition, local or
    // remote, or the aggregation file itself), not a constant or missing one.
    bool draws_on_other_files() const override;

    const Aggregate& aggregate() const { return *agg_; }
    const PathPolicy& paths() const { return *paths_; }
    const FragmentGrid& grid() const { return grid_; }
    // Opens fragment i and checks it against the metadata (allowed root,
    // variable, shape, type); throws SourceError naming the file and reason.
    // Constant and missing fragments: only the resolver's declared check.
    // Returns the logged line when the fragment reads as fill instead
    // (missing_partitions=fill).
    std::optional<std::string> verify_fragment(size_t i) const;
    // True when fragment i would be read as a byte copy (after verify):
    // same type, identity transform, nothing to mask, unpack or convert.
    bool fragment_is_byte_copy(size_t i) const;

    // Fragment i as opened (after verify): for a writer of references to
    // its bytes (aggregation/kerchunk_export). Null dataset for a fragment
    // that reads as fill (missing_partitions=fill) or has no file.
    struct OpenedFragment {
        std::shared_ptr<const Dataset> dataset;   // keeps `variable` alive
        const Variable* variable = nullptr;       // the fragment's variable in dataset
        std::shared_ptr<const OpenFile> file;     // the file dataset reads (null if unknown)
        Fragment fragment;                        // as completed from its file (CF families)
        bool byte_copy = false;                   // read as a byte copy (fragment_is_byte_copy)
        // Same type, nothing to mask, unpack or convert: only the transform
        // (axes, reversal, part) may keep it from being a byte copy.
        bool values_as_is = false;
    };
    OpenedFragment opened_fragment(size_t i) const;
    // The source of fragment i's variable as opened_fragment(i) gives it
    // (its dataset held by the pointer), without building the Fragment
    // when its resolution is still open: for a caller asking once per
    // chunk. Throws SourceError when the fragment reads as fill or has
    // no variable.
    std::shared_ptr<const ArraySource> fragment_source(size_t i) const;

    struct Resolved;

private:
    // keep receives the fragment's dataset: hold it while using the result.
    // Reuses the resolution made before while its file is still open
    // (*reused set), unless `reopen`: then the path is opened again.
    // f: fragment i as declared (agg_->fragments[i]) when the caller built
    // it; null: built here only when the partition is opened. Two threads
    // resolving fragment i of a local file at once (a read and the series'
    // open ahead) open it once: the second waits for the first.
    std::shared_ptr<const Resolved> resolve(size_t i, const Fragment* f, std::shared_ptr<const Dataset>& keep, bool reopen,
                                            bool* reused = nullptr) const;
    // The resolution of fragment i kept from before (still_open), or null
    // with fragment i claimed as being opened by this thread; waits while
    // another thread opens it.
    std::shared_ptr<const Resolved> reuse_or_claim(size_t i, std::shared_ptr<const Dataset>& keep) const;
    // Ends the claim of reuse_or_claim.
    void opened_or_failed(size_t i) const;
    void end_claim(size_t i) const NCAFS_REQUIRES(mutex_);
    // The resolution of fragment i kept from before, when its dataset is
    // still open and its file unchanged (keep receives the dataset); else null.
    std::shared_ptr<const Resolved> still_open(size_t i, std::shared_ptr<const Dataset>& keep) const
        NCAFS_REQUIRES(mutex_);
    // claim: fragment i claimed by this thread (reuse_or_claim; set false
    // once ended here), or null (a reopen). own: f itself when the caller
    // built it for this call (null: f is the caller's): a resolver then
    // completes it in place, leaving f moved from.
    std::shared_ptr<const Resolved> resolve_opened(size_t i, const Fragment& f, std::shared_ptr<const Dataset>& keep,
                                                   bool* claim = nullptr, Fragment* own = nullptr) const;
    // Fragment f checked and conformed against its opened file (no open
    // here); `declared` left for the caller to set.
    std::shared_ptr<Resolved> resolution_of(const Fragment& f, const DatasetCache::Opened& opened,
                                            uint64_t generation) const;
    // The same with f given over: a resolver completes f itself, not a copy.
    std::shared_ptr<Resolved> resolution_of(Fragment&& f, const DatasetCache::Opened& opened,
                                            uint64_t generation) const;
    // After fragment i (of one value, in a local file) was opened: the
    // siblings read their own small fragment i from that file, when it is
    // the same file (read_along).
    void share_opened(size_t i, const Fragment& f, const DatasetCache::Opened& opened, uint64_t generation) const;
    // Keeps the values of fragment i (kept_) read from `opened`, the file a
    // sibling opened for its own fragment i (`opener`), when fragment i lies
    // in that file and is small; failures are left to the read.
    void read_along(size_t i, const Fragment& opener, const DatasetCache::Opened& opened, uint64_t generation) const;
    // Fragment i resolved for a read, and whether it is the resolution kept
    // from before (its file still open): a read of that one which fails with
    // a SourceError (the file changed since it was opened) is tried once
    // more on reopen_for_read(i), which opens the path again.
    struct ForRead {
        std::shared_ptr<const Dataset> keep;  // held while `resolved` is used
        std::shared_ptr<const Resolved> resolved;
        bool reused = false;
    };
    ForRead resolve_for_read(size_t i, SeriesWatch series) const;
    ForRead reopen_for_read(size_t i) const;
    // The checks and conversions of fragment f against its opened variable.
    void conform(const Fragment& f, const std::shared_ptr<const Dataset>& ds, Resolved* r) const;
    // Raises what the resolver knows from the metadata alone about fragment i.
    void check_declared(size_t i) const;
    // Throws SourceError "REASON (partition ...)ADVICE" for f's file.
    [[noreturn]] void reject(const Fragment& f, const std::string& reason, const std::string& advice = {}) const;
    // Why fragment f's file is a gap that missing_partitions=fill reads as
    // fill (absent, unreadable by permission, no dataset signature); nullopt
    // when its failure must stay an error (remote, refused by the roots, damaged).
    std::optional<std::string> why_gap(const Fragment& f) const;
    // After fragment f's file failed to open with `error`: with
    // missing_partitions=fill a gap reads as fill (noted: the caller logs it
    // once); else the error, which names the option when f is a gap.
    std::shared_ptr<const Resolved> fill_or_reject(const Fragment& f, const std::string& error) const;
    // A resolution that reads as fill, noted (the caller logs it once).
    std::shared_ptr<const Resolved> fill_instead(const Fragment& f, const std::string& why) const;
    // The part of fragment i inside the requested box, into its place in out
    // (`piece`: scratch for a part that is not the whole box).
    void read_fragment_part(size_t i, const std::vector<uint64_t>& req_start, const std::vector<uint64_t>& req_count,
                            ByteOrder order, SeriesWatch series, uint8_t* out, std::vector<uint8_t>& piece) const;
    // The values of fragment i (box start/count), resolved as r, read whole
    // and kept (kept_) when it is small and in a local file; else nullopt.
    std::optional<std::vector<uint8_t>> keep_whole(size_t i, const Resolved& r, const std::vector<uint64_t>& start,
                                                   const std::vector<uint64_t>& count) const;
    // In `order` from the fragment's source itself: a classic partition read
    // big-endian is not swapped at all.
    void read_piece(const Fragment& f, const Resolved& r, const std::vector<uint64_t>& lo,
                    const std::vector<uint64_t>& len, ByteOrder order, void* dst) const;

    std::shared_ptr<const Aggregate> agg_;
    std::shared_ptr<const PathPolicy> paths_;
    DatasetCache& cache_;
    std::shared_ptr<const FragmentResolver> resolver_;
    std::shared_ptr<const SiblingSources> siblings_;
    FragmentGrid grid_;
    // Small fragments read along with a sibling's (read_along), until read.
    mutable KeptFragmentValues kept_;
    // Resolutions are kept only while their files may still be open: a
    // bounded number (a multiple of the cache's capacity), least recently
    // used dropped, so a read of a million partitions keeps no per-partition
    // state (a dropped one is resolved again from its newly opened file).
    // A series: reads of one fragment each whose fragment index moves by a
    // constant step (a point's time series) open the next kSeriesOpenAhead
    // fragments of the series ahead, side by side on the kept pool
    // (io/worker_pool.hpp), each once; they stay in the dataset cache
    // (within open_files), so the reads that follow find them open.
    static constexpr size_t kSeriesOpenAhead = 16;
    void note_read_of(size_t i) const;
    void open_ahead(size_t i) const;  // on a pool thread; failures are left to the read
    struct Series {
        size_t last = 0, next = 0;
        int64_t step = 0;
    };
    mutable Mutex series_mutex_;  // guards series_ only; taken alone
    mutable Series series_ NCAFS_GUARDED_BY(series_mutex_);

    std::shared_ptr<const Resolved> resolved(size_t i) const NCAFS_REQUIRES(mutex_);
    // The fragment holding element `first` of the C-order linearisation, with its master index.
    std::optional<size_t> fragment_of_element(uint64_t first, std::vector<uint64_t>& index) const;
    // Returns the resolution it drops (replaced, or the least recently
    // used), for the caller to destroy after the lock.
    std::shared_ptr<const Resolved> keep_resolved(size_t i, std::shared_ptr<const Resolved> r) const
        NCAFS_REQUIRES(mutex_);
    // Guards resolved_ only. Lock order: before DatasetCache::mutex_ (keep_resolved asks its capacity).
    mutable Mutex mutex_;
    mutable LruCache<size_t, std::shared_ptr<const Resolved>> resolved_ NCAFS_GUARDED_BY(mutex_);
    // Fragments being opened (reuse_or_claim), and the threads waiting for one.
    mutable std::unordered_set<size_t> opening_ NCAFS_GUARDED_BY(mutex_);
    mutable size_t waiting_for_open_ NCAFS_GUARDED_BY(mutex_) = 0;
    mutable std::condition_variable opened_;
};

}  // namespace ncafs::agg
