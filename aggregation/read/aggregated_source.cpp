#include "aggregation/read/aggregated_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "aggregation/model/conform_values.hpp"
#include "aggregation/model/fragment_index.hpp"
#include "aggregation/model/scatter_box.hpp"
#include "aggregation/model/sparse_part_read.hpp"
#include "aggregation/read/parallel_pieces.hpp"
#include "codecs/error.hpp"
#include "codecs/memory_source.hpp"
#include "codecs/sniff.hpp"
#include "io/worker_pool.hpp"
#include "remote/network_scope.hpp"
#include "remote/remote_store.hpp"
#include "aggregation/model/shape_text.hpp"

namespace ncafs::agg {

struct AggregatedSource::Resolved {
    // Weak: the bounded cache alone decides how long a file stays open; a
    // reader holds the dataset (returned by resolve) while it reads.
    std::weak_ptr<const Dataset> dataset;
    std::weak_ptr<const OpenFile> file;   // the file that dataset reads (seen_changed: open the path again)
    uint64_t generation = 0;              // DatasetCache::generation() when resolved
    const ArraySource* source = nullptr;  // valid while that dataset lives
    NcType src_type = NcType::Double;
    std::vector<uint64_t> src_shape;
    // Missing-value rules of the partition variable, as netCDF4-python masks:
    // _FillValue (else the type's default fill), missing_value, valid_min/max/range.
    MissingRules missing;
    bool mask = false;         // some element may be masked (-> master fill)
    Affine value;              // unpack -> units -> master packing, raw partition -> raw master
    bool byte_copy = false;    // read as a byte copy: identity transform, same type, nothing to mask or convert
    // With a resolver: the declared fragment as it completed it for this
    // dataset; without one (NCA), null: the declared fragment is read as is.
    std::shared_ptr<const Fragment> completed;
    // The fragment as declared (agg_->fragments[i]), built from the
    // partition table once, when resolved: a read through a kept
    // resolution builds none. Null when `completed` is set (read instead).
    std::shared_ptr<const Fragment> declared;
    // missing_partitions=fill and the file absent or of no dataset format:
    // every element reads as the master's fill (no dataset, nothing kept).
    bool fill = false;
    std::string fill_note;  // why, as logged
};

namespace {

std::vector<double> attribute_values(const Variable& v, const char* name) {
    std::vector<double> out;
    const Attribute* a = v.find_attribute(name);
    if (!a || a->type == NcType::Char) return out;
    for (size_t i = 0; i < a->length(); ++i) out.push_back(a->as_double(i));
    return out;
}

// Fragment i's box in master space, from the table: no Fragment built.
void fragment_box(const FragmentTable& table, size_t i, size_t rank, std::vector<uint64_t>& start,
                  std::vector<uint64_t>& count) {
    start.resize(rank);
    count.resize(rank);
    for (size_t d = 0; d < rank; ++d) start[d] = table.start(i, d), count[d] = table.count(i, d);
}

// Whether values read from fragment f's file may be kept past its open
// (KeptFragmentValues): a local file, whose changes the DatasetCache
// generation tells; a remote object's version is asked again by time.
bool values_may_be_kept(const Fragment& f, const std::shared_ptr<const OpenFile>& file) {
    return f.kind == FragmentKind::File && file && !file->remote_bytes() && !remote::is_remote_url(f.path);
}

// Why the dataset left out a variable of that name (an HDF5 external link, a
// Zarr array with hostile metadata...); nullopt when it has it or says nothing.
std::optional<std::string> left_out_reason(const Dataset& ds, const std::string& name) {
    if (name.empty() || ds.find_variable(name)) return std::nullopt;
    for (const auto& note : ds.notes)
        if (note.name == name) return note.text;
    return std::nullopt;
}

}  // namespace

std::optional<std::string> AggregatedSource::why_gap(const Fragment& f) const {
    // Remote objects fail by the network: never masked.
    if (remote::is_remote_url(f.path)) return std::nullopt;
    OpenResult opened = open_regular_file(f.path, &paths_->confinement());
    if (!opened.fd) {
        // A refusal by the allowed roots (a reason of its own) stays an error.
        const int e = opened.error;
        if (!opened.refused_by_rule && (e == ENOENT || e == ENOTDIR || e == EACCES)) return opened.reason;
        return std::nullopt;
    }
    // A file with a dataset signature that does not parse is damaged or
    // hostile: an error, not a gap.
    if (sniff_fd(opened.fd.get()) == FileFormat::None) return "not a netCDF file (no known magic number)";
    return std::nullopt;
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::fill_or_reject(const Fragment& f,
                                                                                  const std::string& error) const {
    const auto why = why_gap(f);
    if (why && paths_->missing_partitions().fill) return fill_instead(f, *why);
    // The first error a user with an incomplete collection meets: it names the way through.
    reject(f, error, why ? "; -o missing_partitions=fill reads missing partitions as the fill value" : "");
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::fill_instead(const Fragment& f,
                                                                                const std::string& why) const {
    // The same line for every variable the file holds: one line per file.
    const auto& note = paths_->missing_partitions().note;
    if (note) note(f.path + ": " + why + ": its values read as the fill value (missing_partitions=fill)");
    auto r = std::make_shared<Resolved>();
    r->fill = true;
    r->declared = std::make_shared<const Fragment>(f);
    r->fill_note = f.path + ": " + why + " (" + (resolver_ ? resolver_->label(f) : "partition " + f.where) +
                   "): read as the fill value of " + agg_->name + " (missing_partitions=fill)";
    return r;
}

AggregatedSource::AggregatedSource(std::shared_ptr<const Aggregate> aggregate, std::shared_ptr<const PathPolicy> paths,
                                   DatasetCache& cache, std::shared_ptr<const FragmentResolver> resolver,
                                   std::shared_ptr<const SiblingSources> siblings)
    : agg_(std::move(aggregate)), paths_(std::move(paths)), cache_(cache), resolver_(std::move(resolver)),
      siblings_(std::move(siblings)), grid_(*agg_), resolved_(std::max<size_t>(1024, 4 * cache.capacity())) {}

AggregatedSource::~AggregatedSource() = default;

void AggregatedSource::reject(const Fragment& f, const std::string& reason, const std::string& advice) const {
    throw SourceError(f.path, reason + " (" + (resolver_ ? resolver_->label(f) : "partition " + f.where) + ")" + advice);
}

void AggregatedSource::check_declared(size_t i) const {
    if (!resolver_) return;
    try {
        resolver_->check_declared(i);
    } catch (const FragmentRejected& e) {
        reject(agg_->fragments[i], e.what());
    }
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::resolve(size_t i, const Fragment* f,
                                                                           std::shared_ptr<const Dataset>& keep,
                                                                           bool reopen, bool* reused) const {
    check_declared(i);
    if (reused) *reused = false;
    if (!reopen) {
        MutexLock lock(mutex_);
        if (auto r = still_open(i, keep)) {
            if (reused) *reused = true;
            return r;
        }
    }
    std::optional<Fragment> built;  // fragment i as declared, built only when the partition is opened
    const Fragment& declared = f ? *f : built.emplace(agg_->fragments[i]);
    Fragment* own = built ? &*built : nullptr;  // completed in place, not copied
    // A remote object is not waited for: a slow server holds each read to
    // its own deadline, and a failed open is not tried again in turn.
    if (reopen || remote::is_remote_url(declared.path)) return resolve_opened(i, declared, keep, nullptr, own);
    if (auto r = reuse_or_claim(i, keep)) {
        if (reused) *reused = true;
        return r;
    }
    struct Claim {  // given up however the open ends (resolve_opened ends it when it keeps the resolution)
        const AggregatedSource* source;
        size_t i;
        bool held = true;
        ~Claim() {
            if (held) source->opened_or_failed(i);
        }
    } claim{this, i};
    return resolve_opened(i, declared, keep, &claim.held, own);
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::reuse_or_claim(
    size_t i, std::shared_ptr<const Dataset>& keep) const {
    MutexLock lock(mutex_);
    for (;;) {
        if (auto r = still_open(i, keep)) return r;
        if (opening_.insert(i).second) return nullptr;
        // Then its resolution, or (it failed) a claim of this thread's own.
        ++waiting_for_open_;
        lock.wait(opened_);
        --waiting_for_open_;
    }
}

void AggregatedSource::opened_or_failed(size_t i) const {
    MutexLock lock(mutex_);
    end_claim(i);
}

void AggregatedSource::end_claim(size_t i) const {
    opening_.erase(i);
    if (waiting_for_open_ > 0) opened_.notify_all();
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::still_open(
    size_t i, std::shared_ptr<const Dataset>& keep) const {
    // Resolved before and its file still open in the cache: no system
    // call at all; the identity of the fd is checked after the reads
    // (reopen_for_read opens the path again when that check fails).
    auto r = resolved(i);
    if (!r) return nullptr;
    auto ds = r->dataset.lock();
    auto file = r->file.lock();
    if (!ds || (file && file->seen_changed()) || r->generation != cache_.generation()) return nullptr;
    keep = std::move(ds);
    return r;
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::resolve_opened(
    size_t i, const Fragment& f, std::shared_ptr<const Dataset>& keep, bool* claim, Fragment* own) const {
    const uint64_t generation = cache_.generation();  // before the open: a change meanwhile reopens again
    DatasetCache::Opened opened;
    try {
        // Opened confined (every component, symlinks included, under an
        // allowed root: one that leads out is refused with the reason); a
        // changed file gets a new entry.
        opened = cache_.get_opened(f.path, f.group, &paths_->confinement());
    } catch (const SourceError& e) {
        std::string reason = e.what();
        if (reason.rfind(e.file() + ": ", 0) == 0) reason = reason.substr(e.file().size() + 2);
        return fill_or_reject(f, reason);
    } catch (const FormatError&) {
        if (!paths_->missing_partitions().fill) throw;
        if (auto why = why_gap(f)) return fill_instead(f, *why);
        throw;
    }
    const std::shared_ptr<const Dataset>& ds = opened.dataset;
    if (!claim) {  // claimed: no other thread resolved it meanwhile
        MutexLock lock(mutex_);
        auto before = resolved(i);
        if (before && before->dataset.lock() == ds && before->generation == generation) {
            keep = ds;
            return before;
        }
    }
    auto r = own && resolver_ ? resolution_of(std::move(*own), opened, generation) : resolution_of(f, opened, generation);
    // f (== *own) moved from when completed in place: the completed fragment
    // has its kind, path, group and where.
    const Fragment& as_declared = r->completed ? *r->completed : f;
    if (!r->completed) r->declared = std::make_shared<const Fragment>(f);
    std::shared_ptr<const Resolved> dropped;  // destroyed after the lock: other threads wait on it
    {
        MutexLock lock(mutex_);
        dropped = keep_resolved(i, r);
        if (claim) end_claim(i), *claim = false;  // in the same hold of the lock
    }
    keep = ds;
    share_opened(i, as_declared, opened, generation);
    return r;
}

std::shared_ptr<AggregatedSource::Resolved> AggregatedSource::resolution_of(const Fragment& f,
                                                                           const DatasetCache::Opened& opened,
                                                                           uint64_t generation) const {
    if (resolver_) return resolution_of(Fragment(f), opened, generation);  // completed in a copy
    auto r = std::make_shared<Resolved>();
    r->dataset = opened.dataset;
    r->file = opened.file;
    r->generation = generation;
    conform(f, opened.dataset, r.get());
    return r;
}

std::shared_ptr<AggregatedSource::Resolved> AggregatedSource::resolution_of(Fragment&& f,
                                                                           const DatasetCache::Opened& opened,
                                                                           uint64_t generation) const {
    if (!resolver_) return resolution_of(static_cast<const Fragment&>(f), opened, generation);
    const std::shared_ptr<const Dataset>& ds = opened.dataset;
    auto r = std::make_shared<Resolved>();
    r->dataset = ds;
    r->file = opened.file;
    r->generation = generation;
    if (auto why = left_out_reason(*ds, f.variable)) reject(f, *why);  // rather than "no variable"
    try {
        resolver_->complete(f, *ds);  // CF families: axes and units from the file (path and where untouched)
    } catch (const FragmentRejected& e) {
        reject(f, e.what());
    }
    r->completed = std::make_shared<const Fragment>(std::move(f));
    conform(*r->completed, ds, r.get());
    return r;
}

void AggregatedSource::share_opened(size_t i, const Fragment& f, const DatasetCache::Opened& opened,
                                    uint64_t generation) const {
    if (!siblings_ || !values_may_be_kept(f, opened.file) || agg_->fragments.element_count(i) != 1) return;
    for (const auto& sibling : siblings_->others(this)) sibling->read_along(i, f, opened, generation);
}

void AggregatedSource::read_along(size_t i, const Fragment& opener, const DatasetCache::Opened& opened,
                                  uint64_t generation) const {
    const FragmentTable& table = agg_->fragments;
    if (i >= table.size() || table.kind(i) != FragmentKind::File) return;
    const uint64_t bytes = table.element_count(i) * type_size(agg_->type);
    if (bytes > KeptFragmentValues::kMaxBytes || kept_.has(i, generation) || !table.path_is(i, opener.path)) return;
    try {
        Fragment f = table[i];
        if (f.group != opener.group) return;
        check_declared(i);
        // A resolver completes f itself (no copy); without one f is read as declared.
        auto r = resolver_ ? resolution_of(std::move(f), opened, generation) : resolution_of(f, opened, generation);
        const Fragment& as_read = r->completed ? *r->completed : f;
        std::vector<uint8_t> values(static_cast<size_t>(bytes));
        // From the bytes the opener read at the open, when still kept: the
        // opener's own read finds them too (one read for the open).
        std::optional<OpenFile::ShareKeptFile> share;
        if (opened.file) share.emplace(*opened.file);
        read_piece(as_read, *r, as_read.start, as_read.count, ByteOrder::Native, values.data());
        kept_.keep(i, generation, values);
    } catch (const std::exception&) {
        // Its own read opens the file and meets the failure there.
    }
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::resolved(size_t i) const {
    auto hit = resolved_.get(i);
    return hit ? std::move(*hit) : nullptr;
}

std::shared_ptr<const AggregatedSource::Resolved> AggregatedSource::keep_resolved(
    size_t i, std::shared_ptr<const Resolved> r) const {
    if (resolved_.capacity() < 4 * cache_.capacity()) resolved_.set_capacity(4 * cache_.capacity());  // open_files= raised
    std::shared_ptr<const Resolved> dropped;
    if (auto before = resolved_.get(i)) dropped = std::move(*before);  // replaced below
    else if (resolved_.size() >= resolved_.capacity()) dropped = resolved_.pop_least_recent().value_or(nullptr);
    resolved_.put(i, std::move(r));
    return dropped;
}

void AggregatedSource::note_read_of(size_t i) const {
    const size_t ahead = std::max<size_t>(1, std::min(kSeriesOpenAhead, cache_.capacity() / 4));
    std::vector<size_t> wanted;
    {
        MutexLock lock(series_mutex_);
        const int64_t step = static_cast<int64_t>(i) - static_cast<int64_t>(series_.last);
        if (step == 0) return;  // the same fragment again (a retry, the next bytes of it)
        if (step != series_.step || step < 0) {  // a new pattern: wait for it to repeat
            series_ = Series{i, i + static_cast<size_t>(std::max<int64_t>(step, 0)), step};
            return;
        }
        const size_t s = static_cast<size_t>(step), n = agg_->fragments.size();
        series_.last = i;
        for (size_t j = std::max(series_.next, i + s); j < n && j <= i + ahead * s; j += s) wanted.push_back(j);
        if (!wanted.empty()) series_.next = wanted.back() + s;
    }
    std::weak_ptr<const AggregatedSource> self = weak_from_this();
    for (size_t j : wanted)
        if (!WorkerPool::shared().post([self, j] {
                if (auto source = self.lock()) source->open_ahead(j);
            }))
            break;  // the pool is busy or stopped: the reads open them
}

void AggregatedSource::open_ahead(size_t i) const {
    const FragmentKind kind = agg_->fragments.kind(i);
    if (kind != FragmentKind::File && kind != FragmentKind::Self) return;
    if (kept_.has(i, cache_.generation())) return;  // its read needs no file
    remote::NetworkScope network(true);  // a thread of its own: it may wait for a server
    try {
        std::shared_ptr<const Dataset> keep;
        auto r = resolve(i, nullptr, keep, false);
        // A small fragment's values too: a series seen in reads far apart
        // (the first, cut rows of runs computed side by side) opens so far
        // ahead that its file may close before the read.
        std::vector<uint64_t> start, count;
        fragment_box(agg_->fragments, i, agg_->shape.size(), start, count);
        keep_whole(i, *r, start, count);
    } catch (...) {
        // The read of this fragment meets the same failure and reports it.
    }
}

AggregatedSource::ForRead AggregatedSource::resolve_for_read(size_t i, SeriesWatch series) const {
    if (series == SeriesWatch::On) note_read_of(i);
    ForRead f;
    f.resolved = resolve(i, nullptr, f.keep, false, &f.reused);
    return f;
}

AggregatedSource::ForRead AggregatedSource::reopen_for_read(size_t i) const {
    ForRead f;
    f.resolved = resolve(i, nullptr, f.keep, true, nullptr);
    return f;
}

void AggregatedSource::conform(const Fragment& f, const std::shared_ptr<const Dataset>& ds, Resolved* r) const {
    auto fail = [&](const std::string& reason) -> void { reject(f, reason); };
    const Variable* var = nullptr;
    if (!f.variable.empty()) {
        var = ds->find_variable(f.variable);
        if (!var) {
            if (auto why = left_out_reason(*ds, f.variable)) fail(*why);
            fail("has no variable '" + f.variable + "'");
        }
    } else {
        // varid: position among the file's variables (netCDF numbering).
        if (!f.varid || *f.varid < 0 || static_cast<uint64_t>(*f.varid) >= ds->variables.size())
            fail("has no variable with varid " + std::to_string(f.varid.value_or(-1)));
        var = &ds->variables[static_cast<size_t>(*f.varid)];
    }
    if (!var->source) fail("variable '" + var->name + "' has no readable values");
    if (auto why = var->source->refusal()) fail(*why);  // e.g. HDF5 external storage: never read
    r->source = var->source.get();
    r->src_type = var->source->type();
    r->src_shape = var->source->shape();
    if ((r->src_type == NcType::Char) != (agg_->type == NcType::Char))
        fail("variable '" + var->name + "' of type " + std::string(type_name(r->src_type)) +
             " cannot be converted to the master type " + std::string(type_name(agg_->type)));

    const size_t K = f.axis_to_master.size();
    if (r->src_shape.size() != K)
        fail("variable '" + var->name + "' has " + std::to_string(r->src_shape.size()) + " dimensions " +
             shape_text(r->src_shape) + " but the partition has " + std::to_string(K));
    if (!f.declared_shape.empty() && f.declared_shape != r->src_shape)
        fail("variable '" + var->name + "' has shape " + shape_text(r->src_shape) + " but the aggregation declares " +
             shape_text(f.declared_shape));
    std::vector<bool> mapped(agg_->shape.size(), false);
    for (size_t k = 0; k < K; ++k) {
        uint64_t n = r->src_shape[k];
        if (!f.part.empty() && f.part[k]) {
            if (f.part[k]->size() > 0 && f.part[k]->max_index() >= n)
                fail("part selects index " + std::to_string(f.part[k]->max_index()) + " of axis " + std::to_string(k) +
                     " of length " + std::to_string(n));
            n = f.part[k]->size();
        }
        int d = f.axis_to_master[k];
        uint64_t want = d < 0 ? 1 : f.count[static_cast<size_t>(d)];
        if (d >= 0) mapped[static_cast<size_t>(d)] = true;
        if (n != want)
            fail("variable '" + var->name + "' axis " + std::to_string(k) + " gives " + std::to_string(n) +
                 " elements but the partition's location spans " + std::to_string(want));
    }
    for (size_t d = 0; d < mapped.size(); ++d)
        if (!mapped[d] && f.count[d] != 1)
            fail("partition lacks master dimension '" + agg_->dims[d] + "' yet spans " + std::to_string(f.count[d]) + " indices of it");

    // Missing values and packing of the partition variable.
    r->missing = missing_rules(*var, r->src_type);
    auto sf = attribute_values(*var, "scale_factor"), ao = attribute_values(*var, "add_offset");
    const double ps = sf.empty() ? 1.0 : sf[0], po = ao.empty() ? 0.0 : ao[0];
    const double ua = f.units.scale, ub = f.units.offset;
    double a = ps * ua, b = po * ua + ub;  // physical value in master units
    if (agg_->packing) {
        // Present raw values packed with the master's own parameters (A7).
        a /= agg_->packing->scale;
        b = (b - agg_->packing->offset) / agg_->packing->scale;
    }
    r->value = Affine{a, b};

    r->mask = !r->missing.empty() && (!r->value.is_identity() || r->src_type != agg_->type ||
                                      masking_changes_values(r->missing, agg_->type, agg_->fill.data()));
    r->byte_copy = f.transform_is_identity() && r->src_type == agg_->type && r->value.is_identity() && !r->mask &&
               !r->missing.has_range() && r->src_shape == f.count;
}

std::optional<std::string> AggregatedSource::verify_fragment(size_t i) const {
    const Fragment& f = agg_->fragments.at(i);
    std::shared_ptr<const Dataset> keep;
    if (f.kind != FragmentKind::File && f.kind != FragmentKind::Self) {
        check_declared(i);
        return std::nullopt;
    }
    auto r = resolve(i, &f, keep, true);  // the file as its path names it now
    if (r->fill) return r->fill_note;
    return std::nullopt;
}

bool AggregatedSource::fragment_is_byte_copy(size_t i) const {
    const Fragment& f = agg_->fragments.at(i);
    if (f.kind != FragmentKind::File && f.kind != FragmentKind::Self) return false;
    std::shared_ptr<const Dataset> keep;
    return resolve(i, &f, keep, false)->byte_copy;
}

AggregatedSource::OpenedFragment AggregatedSource::opened_fragment(size_t i) const {
    OpenedFragment out;
    out.fragment = agg_->fragments.at(i);
    if (out.fragment.kind != FragmentKind::File && out.fragment.kind != FragmentKind::Self) return out;
    std::shared_ptr<const Dataset> keep;
    auto r = resolve(i, &out.fragment, keep, false);
    if (r->fill || !keep) return out;
    if (r->completed) out.fragment = *r->completed;
    for (const auto& v : keep->variables)
        if (v.source.get() == r->source) out.variable = &v;
    out.dataset = std::move(keep);
    out.file = r->file.lock();
    out.byte_copy = r->byte_copy;
    out.values_as_is = r->src_type == agg_->type && r->value.is_identity() && !r->mask && !r->missing.has_range();
    return out;
}

std::shared_ptr<const ArraySource> AggregatedSource::fragment_source(size_t i) const {
    {
        // The common case, once per chunk reference: resolved and still
        // open, so no Fragment is built from the table (nor copied).
        check_declared(i);
        std::shared_ptr<const Dataset> keep;
        MutexLock lock(mutex_);
        if (auto r = still_open(i, keep); r && !r->fill && r->source)
            return std::shared_ptr<const ArraySource>(std::move(keep), r->source);  // holds the dataset
    }
    auto again = opened_fragment(i);
    if (!again.variable) throw SourceError(again.fragment.path, "no longer readable as a partition");
    return again.variable->source;
}

void AggregatedSource::read_piece(const Fragment& f, const Resolved& r, const std::vector<uint64_t>& lo,
                                  const std::vector<uint64_t>& len, ByteOrder order, void* dst) const {
    const size_t rank = len.size();
    uint64_t n = 1;
    for (uint64_t l : len) n *= l;
    const size_t msize = type_size(agg_->type);

    if (f.kind == FragmentKind::Missing || f.kind == FragmentKind::Constant || r.fill) {
        fill_elements(dst, (f.kind == FragmentKind::Constant ? f.constant : agg_->fill).data(), msize, n);
        if (order == ByteOrder::Big) swap_to_big_endian(agg_->type, dst, n);
        return;
    }
    // Local offsets inside the fragment's box.
    std::vector<uint64_t> local(rank);
    for (size_t d = 0; d < rank; ++d) local[d] = lo[d] - f.start[d];

    if (r.byte_copy) {
        r.source->read(local, len, order, dst);
        return;
    }
    const SourceIndex source_index{f, local};
    const size_t ssize = type_size(r.src_type);
    const SourceBox box = source_box(f, source_index, len);
    const uint64_t src_n = ncafs::element_count(box.count);
    if (box_too_sparse(src_n, n)) {  // a sparse part: read runs of consecutive indices instead of the box
        const size_t k = sparsest_axis(f, len, box);
        return read_in_runs(static_cast<size_t>(f.axis_to_master[k]), [&](uint64_t j) { return source_index(k, j); }, lo,
                            len, msize, dst, [&](const auto& sl, const auto& sn, void* sd) { read_piece(f, r, sl, sn, order, sd); });
    }
    std::vector<uint8_t> src(src_n * ssize);
    r.source->read(box.lo, box.count, ByteOrder::Native, src.data());
    std::vector<uint8_t> gathered;
    const uint8_t* ordered = src.data();
    if (!f.transform_is_identity()) {
        gathered = gather_master_order(f, source_index, len, box, src.data(), ssize);
        ordered = gathered.data();
    }
    // Values: mask -> affine -> cast; masked and out-of-range become the master fill.
    conform_elements(r.missing, r.mask, r.value, r.src_type, ordered, agg_->type, static_cast<uint8_t*>(dst), n,
                     agg_->fill.data());
    if (order == ByteOrder::Big) swap_to_big_endian(agg_->type, dst, n);
}

void AggregatedSource::read_fragment_part(size_t i, const std::vector<uint64_t>& req_start,
                                          const std::vector<uint64_t>& req_count, ByteOrder order, SeriesWatch series,
                                          uint8_t* out, std::vector<uint8_t>& piece) const {
    const size_t rank = agg_->shape.size(), msize = type_size(agg_->type);
    const FragmentTable& table = agg_->fragments;  // its box: no Fragment built for a partition resolved before
    std::vector<uint64_t> frag_start, frag_count;
    fragment_box(table, i, rank, frag_start, frag_count);
    const PieceOfRequest piece_box = piece_of_request(req_start, req_count, frag_start, frag_count);
    const std::vector<uint64_t>&lo = piece_box.lo, &len = piece_box.len, &at = piece_box.at;
    const bool whole = piece_box.whole;
    // The piece, read into the pointer given, placed into out.
    auto place = [&](auto&& read_into) {
        if (whole) {
            read_into(out);
        } else if (std::equal(len.begin() + 1, len.end(), req_count.begin() + 1)) {
            // Only the slowest dim is cut: the piece is one run of `out`, read in place.
            read_into(out + at[0] * (ncafs::element_count(len) / len[0]) * msize);
        } else {
            piece.resize(ncafs::element_count(len) * msize);
            read_into(piece.data());
            scatter_box(piece.data(), len, at, req_count, msize, out);
        }
    };
    const FragmentKind kind = table.kind(i);
    // The piece out of the whole fragment's values (in memory).
    auto place_from = [&](std::vector<uint8_t> values) {
        if (len == frag_count) {  // all of it: as it is
            return place([&](uint8_t* dst) {
                std::memcpy(dst, values.data(), values.size());
                if (order == ByteOrder::Big) swap_to_big_endian(agg_->type, dst, ncafs::element_count(len));
            });
        }
        const MemorySource whole_fragment(agg_->type, frag_count, std::move(values), agg_->name);
        std::vector<uint64_t> local(rank);
        for (size_t d = 0; d < rank; ++d) local[d] = lo[d] - frag_start[d];
        place([&](uint8_t* dst) { whole_fragment.read(local, len, order, dst); });
    };
    std::vector<uint8_t> kept;
    if (kind == FragmentKind::File && kept_.find(i, cache_.generation(), kept)) {
        // Read along with a sibling's fragment of the same file, or its
        // other part read before: no open.
        if (series == SeriesWatch::On) note_read_of(i);
        place_from(std::move(kept));
    } else if (kind == FragmentKind::File || kind == FragmentKind::Self) {
        // A failed read of the resolution kept from before: its file changed
        // since it was opened, so once more from its path, which names the
        // version there now.
        for (ForRead f = resolve_for_read(i, series);; f = reopen_for_read(i)) {
            try {
                const Resolved& r = *f.resolved;
                // A small fragment cut by the request (a computed block's edge
                // cuts a row): kept whole, as the request holding its other part
                // may come after its file closed.
                std::optional<std::vector<uint8_t>> values;
                if (len != frag_count) values = keep_whole(i, r, frag_start, frag_count);
                if (values) return place_from(std::move(*values));
                const Fragment& as_read = r.completed ? *r.completed : *r.declared;
                return place([&](uint8_t* dst) { read_piece(as_read, r, lo, len, order, dst); });
            } catch (const SourceError&) {
                if (!f.reused) throw;
                f = {};  // the old version let go before the path is opened again
            }
        }
    } else {
        check_declared(i);
        static const Resolved none{};
        const Fragment declared = table[i];
        place([&](uint8_t* dst) { read_piece(declared, none, lo, len, order, dst); });
    }
}

void AggregatedSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                            void* out) const {
    check_box(agg_->shape, start, count, agg_->name.c_str());
    uint64_t n = 1;
    for (uint64_t c : count) n *= c;
    if (n == 0) return;
    const size_t msize = type_size(agg_->type);
    std::vector<size_t> touched;
    bool uncovered = grid_.for_each_fragment(start, count, [&](size_t i) { touched.push_back(i); });
    if (uncovered) {
        std::vector<uint8_t> fill = agg_->fill;
        if (order == ByteOrder::Big) swap_to_big_endian(agg_->type, fill.data(), 1);
        fill_elements(out, fill.data(), msize, n);
    }

    const std::vector<uint64_t> req_start(start.begin(), start.end()), req_count(count.begin(), count.end());
    // Partitions are read on a few threads at once (their preads together,
    // in file order); each writes its own part of `out`, as partitions do
    // not overlap.
    std::vector<std::vector<uint8_t>> pieces(1 + kExtraThreads);
    // One fragment: its source may see a series in such reads; many: read
    // together, their partitions need no opening ahead.
    const SeriesWatch series = touched.size() == 1 ? SeriesWatch::On : SeriesWatch::Off;
    auto piece = [&](size_t k, size_t worker) {
        read_fragment_part(touched[k], req_start, req_count, order, series, static_cast<uint8_t*>(out),
                           pieces[worker]);
    };
    if (!few_pieces(touched.size())) return run_pieces(touched.size(), piece);
    for (size_t k = 0; k < touched.size(); ++k) piece(k, 0);  // on the caller's thread
}

bool AggregatedSource::draws_on_other_files() const {
    // Self fragments count too: they are read like partitions, through the
    // dataset cache, whose opens (with allow_other) serve checked callers only.
    const FragmentTable& table = agg_->fragments;
    for (size_t i = 0; i < table.size(); ++i)
        if (table.kind(i) == FragmentKind::File || table.kind(i) == FragmentKind::Self) return true;
    return false;
}

std::optional<std::vector<uint8_t>> AggregatedSource::uniform_value(std::span<const uint64_t> start,
                                                                     std::span<const uint64_t> count) const {
    check_box(agg_->shape, start, count, agg_->name.c_str());
    std::optional<std::vector<uint8_t>> value;
    bool uniform = true;
    auto meet = [&](const std::vector<uint8_t>& v) {
        if (!value) value = v;
        else if (*value != v) uniform = false;
    };
    if (grid_.for_each_fragment(start, count, [&](size_t i) {
            const Fragment& f = agg_->fragments[i];
            if (f.kind == FragmentKind::Missing || f.kind == FragmentKind::Constant) {
                try {
                    check_declared(i);  // a rejected fragment must fail at read time, not look uniform
                } catch (const std::exception&) {
                    uniform = false;
                    return;
                }
            }
            if (f.kind == FragmentKind::Missing) meet(agg_->fill);
            else if (f.kind == FragmentKind::Constant) meet(f.constant);
            else uniform = false;
        }))
        meet(agg_->fill);
    if (!uniform) return std::nullopt;
    return value;
}

std::optional<size_t> AggregatedSource::fragment_of_element(uint64_t first, std::vector<uint64_t>& index) const {
    auto at = unravel_index(first, agg_->shape);
    if (!at) return std::nullopt;
    index = std::move(*at);
    return grid_.fragment_at(index);
}

bool AggregatedSource::extents_would_open(uint64_t first) const {
    std::vector<uint64_t> index;
    auto fi = fragment_of_element(first, index);
    if (!fi) return false;
    const FragmentKind kind = agg_->fragments.kind(*fi);
    if (kind != FragmentKind::File && kind != FragmentKind::Self) return false;
    if (kept_.has(*fi, cache_.generation())) return false;  // read along with a sibling's
    MutexLock lock(mutex_);
    auto r = resolved(*fi);
    return !r || r->dataset.expired() || r->generation != cache_.generation();
}

std::optional<std::vector<FileExtent>> AggregatedSource::big_endian_extents(uint64_t first, uint64_t n,
                                                                            SeriesWatch series) const {
    const auto& shape = agg_->shape;
    const size_t rank = shape.size();
    if (n == 0) return std::vector<FileExtent>{};
    std::vector<uint64_t> index;
    auto fi = fragment_of_element(first, index);
    if (!fi) return std::nullopt;
    const FragmentTable& table = agg_->fragments;  // its box: no Fragment built for a partition resolved before
    const FragmentKind kind = table.kind(*fi);
    if (kind != FragmentKind::File && kind != FragmentKind::Self) return std::nullopt;
    if (kept_.has(*fi, cache_.generation())) return std::nullopt;  // computed from the values kept: no open
    std::vector<uint64_t> box_start, box_count;
    fragment_box(table, *fi, rank, box_start, box_count);
    bool inside = true;
    for_each_linear_box(shape, first, n, [&](std::span<const uint64_t> s, std::span<const uint64_t> c, uint64_t) {
        if (!box_inside(s, c, box_start, box_count)) inside = false;
    });
    if (!inside) return std::nullopt;
    // Inside the box with source shape == box shape, a master run is a run of the source too.
    const uint64_t src_first = offset_in_box(index, box_start, box_count);
    const bool cut = src_first != 0 || n != ncafs::element_count(box_count);
    auto extents_of = [&](const Resolved& r) -> std::optional<std::vector<FileExtent>> {
        // Its other part may be read by another request, after its file closed.
        if (cut) keep_whole(*fi, r, box_start, box_count);
        if (!r.byte_copy) return std::nullopt;
        return r.source->big_endian_extents(src_first, n);
    };
    for (ForRead f = resolve_for_read(*fi, series);; f = reopen_for_read(*fi)) {  // as read_fragment_part
        try {
            return extents_of(*f.resolved);
        } catch (const SourceError&) {
            if (!f.reused) throw;
            f = {};
        }
    }
}

std::optional<std::vector<uint8_t>> AggregatedSource::keep_whole(size_t i, const Resolved& r,
                                                                 const std::vector<uint64_t>& start,
                                                                 const std::vector<uint64_t>& count) const {
    const Fragment& as_read = r.completed ? *r.completed : *r.declared;
    const uint64_t bytes = ncafs::element_count(count) * type_size(agg_->type);
    if (bytes > KeptFragmentValues::kMaxBytes || !values_may_be_kept(as_read, r.file.lock())) return std::nullopt;
    std::vector<uint8_t> values(static_cast<size_t>(bytes));
    read_piece(as_read, r, start, count, ByteOrder::Native, values.data());
    kept_.keep(i, r.generation, values);
    return values;
}

}  // namespace ncafs::agg
