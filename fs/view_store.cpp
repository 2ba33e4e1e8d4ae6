#include "fs/view_store.hpp"

#include <algorithm>
#include <cerrno>
#include <new>
#include <system_error>

#include "aggregation/read/dataset_cache.hpp"
#include "codecs/lod_dataset.hpp"
#include "fs/log.hpp"
#include "fs/view_names.hpp"
#include "io/metadata_budget.hpp"
#include "io/system_call_error.hpp"

namespace ncafs::fs {

namespace {

bool transient_errno(int error) {
    return error == EMFILE || error == ENFILE || error == ENOMEM || error == EAGAIN || error == EINTR;
}

}  // namespace

bool failure_may_pass(const std::exception& failure) {
    if (dynamic_cast<const std::bad_alloc*>(&failure) || dynamic_cast<const SourceChangedError*>(&failure))
        return true;
    if (const auto* budget = dynamic_cast<const MetadataBudgetError*>(&failure)) return budget->total();
    if (const auto* call = dynamic_cast<const SystemCallError*>(&failure)) return transient_errno(call->error_number());
    if (const auto* system = dynamic_cast<const std::system_error*>(&failure))
        return (system->code().category() == std::generic_category() ||
                system->code().category() == std::system_category()) &&
               transient_errno(system->code().value());
    return false;
}

ViewStore::ViewStore(const ConfinedRoots& source, const ViewOptions& options, const Backend& backend)
    : source_(source),
      options_(options),
      backend_(backend),
      // Opened datasets hold descriptors: open_files bounds them, and so does RLIMIT_NOFILE.
      open_capacity_(std::min(options.open_files, agg::descriptor_budget())) {
    view_sizes_.set_capacity(kClassificationCapacity);
    view_verdicts_.set_capacity(kClassificationCapacity);
    lod_datasets_.set_capacity(kClassificationCapacity);
    remote_datasets_.set_capacity(kClassificationCapacity);
    unreadable_.set_capacity(kClassificationCapacity);
    datasets_.set_capacity(open_capacity_);
    views_.set_capacity(open_capacity_);
    source_files_.set_capacity(open_capacity_);
}

size_t ViewStore::dataset_open_count() const {
    MutexLock lock(mutex_);
    return dataset_open_count_;
}

std::shared_ptr<const Dataset> ViewStore::dataset(const std::string& path, const struct stat& st, bool aggregation) {
    const DatasetKey key{file_key(path, st), aggregation};
    {
        MutexLock lock(mutex_);
        if (auto hit = datasets_.get(key)) return *hit;
    }
    auto d = backend_.open_dataset(path, aggregation);  // outside the lock: parsing may be slow
    // The key is the stat taken before the open: if the name now gives
    // another file, the dataset may be of either; refuse rather than cache it.
    struct stat now {};
    if (!source_.stat(path, now) || identity_from_stat(now) != identity_from_stat(st)) throw SourceChangedError(path);
    MutexLock lock(mutex_);
    ++dataset_open_count_;
    datasets_.put(key, d);
    return d;
}

std::shared_ptr<const Dataset> ViewStore::dataset_at(const std::string& path, const struct stat& st, bool aggregation,
                                                     int lod) {
    std::shared_ptr<const Dataset> data = dataset(path, st, aggregation);
    if (lod > 0) data = std::make_shared<const Dataset>(make_lod_dataset(*data, lod, options_.lod_keep));
    return data;
}

std::shared_ptr<const Dataset> ViewStore::readable_dataset(const std::string& path, const struct stat& st,
                                                           bool aggregation, bool& remembered) {
    const DatasetKey key{file_key(path, st), aggregation};
    remembered = true;
    {
        MutexLock lock(mutex_);
        if (unreadable_.get(key)) return nullptr;
    }
    try {
        return dataset(path, st, aggregation);
    } catch (const std::exception& ex) {
        // A file that does not parse: an operator may want to know, once.
        log_once(LogLevel::Warning, path + ": cannot be read, so its views are not shown: " + ex.what());
        remembered = !failure_may_pass(ex);
        MutexLock lock(mutex_);
        if (remembered) unreadable_.put(key, true);
        return nullptr;
    }
}

void ViewStore::keep_aggregation(const FileKey& file, std::shared_ptr<const Dataset> dataset,
                                 std::shared_ptr<const VirtualFile> nc_view) {
    const ViewKey key{DatasetKey{file, true}, ViewKind::Nc, {}};
    const uint64_t size = nc_view->size();
    MutexLock lock(mutex_);
    ++dataset_open_count_;
    datasets_.put(key.dataset, std::move(dataset));
    views_.put(key, std::move(nc_view));
    view_sizes_.put(key, size);
}

std::shared_ptr<const VirtualFile> ViewStore::view_of(const Entry& v, uint64_t epoch) {
    // Only the ncs view records its name; nc and ds views are the same for any name.
    const ViewKey sized = v.view_key();
    ViewKey key = sized;
    key.epoch = epoch;
    {
        MutexLock lock(mutex_);
        if (auto hit = views_.get(key)) return *hit;
    }
    auto vf = backend_.make_view(dataset_at(v.real_path, v.st, v.aggregation, v.lod),
                                 view_format(v.view_kind).extension, v.name);
    uint64_t size = vf->size();
    MutexLock lock(mutex_);
    views_.put(key, vf);
    view_sizes_.put(sized, size);
    return vf;
}

std::optional<bool> ViewStore::verdict(const Entry& v) {
    MutexLock lock(mutex_);
    return view_verdicts_.get(v.view_key());
}

void ViewStore::remember_verdict(const Entry& v, bool servable) {
    MutexLock lock(mutex_);
    view_verdicts_.put(v.view_key(), servable);
}

bool ViewStore::view_servable(Entry& v, bool need_size) {
    const ViewKey key = v.view_key();
    {
        MutexLock lock(mutex_);
        if (auto hit = view_sizes_.get(key)) {
            v.size = *hit;
            return true;
        }
        if (auto verdict = view_verdicts_.get(key); verdict && (!*verdict || !need_size)) return *verdict;
    }
    if (need_size || !backend_.cheap_verdict) return size_view(v);
    if (auto verdict = judge_cheaply(v)) return *verdict;
    return size_view(v);
}

std::optional<bool> ViewStore::judge_cheaply(const Entry& v) {
    bool remembered = true;
    if (!readable_dataset(v.real_path, v.st, v.aggregation, remembered)) {
        if (remembered) remember_verdict(v, false);
        return false;
    }
    std::optional<std::string> refusal;
    try {
        refusal = backend_.cheap_verdict(*dataset_at(v.real_path, v.st, v.aggregation, v.lod),
                                         view_format(v.view_kind).extension);
    } catch (const std::exception& ex) {
        if (failure_may_pass(ex)) return false;
        refusal = ex.what();
    }
    if (!refusal) return std::nullopt;
    if (!refusal->empty()) {
        log_once(LogLevel::Debug, v.real_path + ": no " + v.name + " view: " + *refusal);
        remember_verdict(v, false);
        return false;
    }
    remember_verdict(v, true);
    return true;
}

bool ViewStore::size_view(Entry& v) {
    bool remembered = true;
    if (!readable_dataset(v.real_path, v.st, v.aggregation, remembered)) {
        if (remembered) remember_verdict(v, false);
        return false;
    }
    try {
        v.size = view_of(v)->size();
    } catch (const std::exception& ex) {
        // A dataset this view cannot hold (no VDS type, too many chunks...): a
        // fact about the dataset, not something to act on; one claiming more
        // memory than its budget is a warning (an operator may raise the bound).
        const bool budget = dynamic_cast<const MetadataBudgetError*>(&ex) != nullptr;
        log_once(budget ? LogLevel::Warning : LogLevel::Debug, v.real_path + ": no " + v.name + " view: " + ex.what());
        if (!failure_may_pass(ex)) remember_verdict(v, false);
        return false;
    }
    return true;
}

bool ViewStore::dataset_has_lods(const std::string& path, const struct stat& st, bool aggregation) {
    const DatasetKey key{file_key(path, st), aggregation};
    {
        MutexLock lock(mutex_);
        if (auto hit = lod_datasets_.get(key)) return *hit;
    }
    bool readable = true;
    auto d = readable_dataset(path, st, aggregation, readable);
    if (!d && !readable) return false;  // may pass: not remembered
    const bool has = d && shows_lod_views(*d, aggregation, options_.lod_min_size);
    MutexLock lock(mutex_);
    lod_datasets_.put(key, has);
    return has;
}

bool ViewStore::draws_on_remote(const Entry& entry) {
    if (entry.kind != EntryKind::View || !entry.aggregation || !backend_.draws_on_remote) return false;
    // Asked at every open of a view (twice): the answer walks every partition,
    // and only the aggregation file (its identity is in the key) decides it.
    const DatasetKey key{entry.file_key(), true};
    {
        MutexLock lock(mutex_);
        if (auto hit = remote_datasets_.get(key)) return *hit;
    }
    const bool remote = backend_.draws_on_remote(*dataset(entry.real_path, entry.st, true));
    MutexLock lock(mutex_);
    remote_datasets_.put(key, remote);
    return remote;
}

std::shared_ptr<const std::vector<std::string>> ViewStore::source_files(const Entry& entry) {
    // A view of a *.vds/ or *.zarr/ folder draws on its members, as an aggregation on its partitions.
    const bool vds_folder = S_ISDIR(entry.st.st_mode);
    if (entry.kind != EntryKind::View || (!entry.aggregation && !vds_folder))
        return std::make_shared<const std::vector<std::string>>(1, entry.real_path);
    const FileKey key = entry.file_key();
    {
        MutexLock lock(mutex_);
        if (auto hit = source_files_.get(key)) return *hit;
    }
    auto data = dataset(entry.real_path, entry.st, entry.aggregation);
    auto files = std::make_shared<std::vector<std::string>>();
    if (backend_.source_files) *files = backend_.source_files(*data);
    if (files->empty() || files->front() != entry.real_path) files->insert(files->begin(), entry.real_path);
    std::shared_ptr<const std::vector<std::string>> result = std::move(files);
    MutexLock lock(mutex_);
    source_files_.put(key, result);
    return result;
}

}  // namespace ncafs::fs
