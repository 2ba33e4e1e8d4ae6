#include "fs/catalog.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <iterator>
#include <new>
#include <set>
#include <span>
#include <system_error>

#include "aggregation/read/dataset_cache.hpp"
#include "aggregation/read/precheck.hpp"
#include "aggregation/zarr_store/zarr_store_dataset.hpp"
#include "aggregation/zarr_view/zarr_member_files.hpp"
#include "codecs/error.hpp"
#include "codecs/lod_dataset.hpp"
#include "codecs/sniff.hpp"
#include "codecs/types.hpp"
#include "io/metadata_budget.hpp"
#include "fs/log.hpp"
#include "fs/view_names.hpp"

namespace ncafs::fs {

namespace {

constexpr size_t kClassificationCapacity = 200000;  // small entries: ~100 bytes each
// st_blksize: netcdf-c sizes its classic-file reads from it (4 x st_blksize
// per request), cat and cp read max(128 KiB, st_blksize). At 1 MiB netcdf-c
// read 4 MiB per request; at 64 KiB clients issue local-file-sized reads
// (tests/bench/netcdf_clients_bench.py) and cat keeps its throughput: the
// kernel's readahead (128 KiB bdi default) sizes the FUSE requests anyway.
// What the daemon computes per request is its own affair (BlockCache and
// Readahead, block_cache.hpp and readahead.hpp).
constexpr blksize_t kPreferredIoSize = 64 << 10;

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const std::string& dir, const std::string& name) {
    if (dir.empty()) return name;
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

FileKey file_key(const std::string& path, const struct stat& st) { return FileKey{path, identity_from_stat(st)}; }

// The key of view `view` (LOD `lod`) of the file; the name is part of it only for a format that records it.
ViewKey view_key(const std::string& path, const struct stat& st, bool aggregation, const std::string& view,
                 const std::string& name, int lod) {
    const ViewFormat& format = view_format_named(view, "view");
    return ViewKey{DatasetKey{file_key(path, st), aggregation}, format.kind, format.records_name ? name : std::string(),
                   lod};
}

}  // namespace

FileIdentity Entry::identity() const { return identity_from_stat(st); }

Catalog::Catalog(std::string source_root, ViewOptions options, Backend backend)
    : root_(lexically_normal_absolute(source_root)),
      confined_(std::make_shared<const ConfinedRoots>(std::vector<std::string>{root_})),
      options_(std::move(options)),
      backend_(std::move(backend)) {
    classifications_.set_capacity(kClassificationCapacity);
    formats_.set_capacity(kClassificationCapacity);
    netcdf4_.set_capacity(kClassificationCapacity);
    prechecks_.set_capacity(kClassificationCapacity);
    view_sizes_.set_capacity(kClassificationCapacity);
    view_verdicts_.set_capacity(kClassificationCapacity);
    lod_datasets_.set_capacity(kClassificationCapacity);
    remote_datasets_.set_capacity(kClassificationCapacity);
    unreadable_.set_capacity(kClassificationCapacity);
    // Opened datasets hold descriptors: open_files bounds them, and so does RLIMIT_NOFILE.
    datasets_.set_capacity(std::min(options_.open_files, agg::descriptor_budget()));
    views_.set_capacity(datasets_.capacity());
    zarr_layouts_.set_capacity(datasets_.capacity());
    source_files_.set_capacity(datasets_.capacity());
    if (!backend_.sniff)
        backend_.sniff = [c = confined_](const std::string& path) { return sniff_source_format(path, c.get()); };
}

bool Catalog::nc_view_enabled() const { return options_.has_view("nc"); }

size_t Catalog::classification_count() const {
    MutexLock lock(mutex_);
    return classification_count_;
}

size_t Catalog::sniff_count() const {
    MutexLock lock(mutex_);
    return sniff_count_;
}

size_t Catalog::precheck_count() const {
    MutexLock lock(mutex_);
    return precheck_count_;
}

size_t Catalog::dataset_open_count() const {
    MutexLock lock(mutex_);
    return dataset_open_count_;
}

namespace {

// True when the file is HDF5 (a netCDF-4 file).
bool has_hdf5_signature(const std::string& path, const ConfinedRoots& within) {
    OpenResult opened = open_regular_file(path, &within);
    return opened.fd && sniff_fd(opened.fd.get()) == FileFormat::Hdf5;
}

}  // namespace

bool Catalog::is_store_directory(const std::string& name, const std::string& path) const {
    // Only folders named *.vds or *.zarr are looked into: other folders cost nothing more.
    struct stat st {};
    if (name.size() > 5 && ends_with(name, ".zarr")) {  // a stat per marker file, only for folders named *.zarr
        for (const char* marker : kZarrStoreMarkers)
            if (stat_within_source(path + "/" + marker, st) && S_ISREG(st.st_mode)) return true;
        return false;
    }
    return name.size() > 4 && ends_with(name, ".vds") && stat_within_source(path + "/VolumeDataLayout", st) &&
           S_ISREG(st.st_mode);
}

bool Catalog::stat_within_source(const std::string& path, struct stat& st) const {
    // Every component walked from SOURCE's fd; symlinks followed only while
    // they stay inside: the mount must not become a window onto the machine.
    return confined_->stat(path, st);
}

OpenResult Catalog::open_real_file(const Entry& entry) {
    OpenResult r = open_regular_file(entry.real_path, confined_.get());
    if (!r.fd && (r.error == EMFILE || r.error == ENFILE) && dataset_cache().drop_idle() > 0)
        r = open_regular_file(entry.real_path, confined_.get());
    return r;
}

SourceFormat Catalog::sniff(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = formats_.get(key)) return *hit;
    }
    SourceFormat f = backend_.sniff(path);
    if (f != SourceFormat::ReferenceSet && only_reference_sets(path)) f = SourceFormat::None;  // other JSON: no dataset
    MutexLock lock(mutex_);
    ++sniff_count_;
    formats_.put(key, f);
    return f;
}

Classification Catalog::classify(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = classifications_.get(key)) return *hit;
    }
    Classification c;
    std::shared_ptr<const VirtualFile> view;
    std::shared_ptr<const Dataset> data;
    // A store directory (is_store_directory: *.vds/, *.zarr/) is a dataset; the backend tells them apart.
    SourceFormat format = S_ISDIR(st.st_mode) ? SourceFormat::Vds : sniff(path, st);
    if (format != SourceFormat::None) c.kind = Classification::Dataset;
    const bool references = format == SourceFormat::ReferenceSet;  // a JSON text read like an aggregation
    const std::string what = references ? "a reference set" : "an aggregation";
    if (references || (format == SourceFormat::Netcdf && agg::has_aggregation_name(path) && may_be_aggregation(path, st))) {
        try {
            if (references || backend_.is_aggregation(path)) {
                data = backend_.open_dataset(path, true);
                view = backend_.make_view(data, "nc", "");
                c.kind = Classification::Aggregation;
                c.nc_size = view->size();
            }
        } catch (const std::exception& e) {
            c.kind = Classification::Broken;
            log_once(LogLevel::Warning, path + ": shown as a plain file, not as " + what + ": " + e.what());
        } catch (...) {
            c.kind = Classification::Broken;
            log_once(LogLevel::Warning, path + ": shown as a plain file, not as " + what + ": unknown error");
        }
    }
    MutexLock lock(mutex_);
    ++classification_count_;
    classifications_.put(key, c);
    if (view) {
        ++dataset_open_count_;
        const ViewKey nc_view{DatasetKey{key, true}, ViewKind::Nc, {}};
        datasets_.put(nc_view.dataset, data);
        views_.put(nc_view, view);
        view_sizes_.put(nc_view, c.nc_size);
    }
    return c;
}

bool Catalog::may_be_aggregation(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = prechecks_.get(key)) return *hit;
    }
    OpenResult opened = open_regular_file(path, confined_.get());  // O_NONBLOCK, regular files only
    if (!opened.fd) return false;  // unreadable: served (and failing) as a plain file
    const bool maybe = agg::precheck_opened_file(opened.fd.get(), path) == agg::Precheck::Maybe;
    MutexLock lock(mutex_);
    ++precheck_count_;
    // Another file than `st` describes was opened (a swap): answer, but do not remember.
    if (identity_from_stat(opened.st) == identity_from_stat(st)) prechecks_.put(key, maybe);
    return maybe;
}

std::shared_ptr<const Dataset> Catalog::dataset(const std::string& path, const struct stat& st, bool aggregation) {
    const DatasetKey key{file_key(path, st), aggregation};
    {
        MutexLock lock(mutex_);
        if (auto hit = datasets_.get(key)) return *hit;
    }
    auto d = backend_.open_dataset(path, aggregation);  // outside the lock: parsing may be slow
    // The key is the stat taken before the open: if the name now gives
    // another file, the dataset may be of either; refuse rather than cache it.
    struct stat now {};
    if (!stat_within_source(path, now) || identity_from_stat(now) != identity_from_stat(st))
        throw SourceError(path, "changed while it was being opened: not served (try again)");
    MutexLock lock(mutex_);
    ++dataset_open_count_;
    datasets_.put(key, d);
    return d;
}

std::shared_ptr<const Dataset> Catalog::dataset_at(const std::string& path, const struct stat& st, bool aggregation,
                                                   int lod) {
    std::shared_ptr<const Dataset> data = dataset(path, st, aggregation);
    if (lod > 0) data = std::make_shared<const Dataset>(make_lod_dataset(*data, lod, options_.lod_keep));
    return data;
}

std::shared_ptr<const VirtualFile> Catalog::view_of(const std::string& path, const struct stat& st, bool aggregation,
                                                    const std::string& view, const std::string& name, int lod,
                                                    uint64_t epoch) {
    // Only the ncs view records its name; nc and ds views are the same for any name.
    const ViewKey sized = view_key(path, st, aggregation, view, name, lod);
    ViewKey key = sized;
    key.epoch = epoch;
    {
        MutexLock lock(mutex_);
        if (auto hit = views_.get(key)) return *hit;
    }
    auto vf = backend_.make_view(dataset_at(path, st, aggregation, lod), view, name);
    uint64_t size = vf->size();
    MutexLock lock(mutex_);
    views_.put(key, vf);
    view_sizes_.put(sized, size);
    return vf;
}

std::shared_ptr<const ConfinedRoots> Catalog::allowed_roots() const {
    return backend_.confined ? backend_.confined : confined_;
}

std::optional<Entry> Catalog::resolve(const std::string& virtual_path) {
    if (virtual_path.empty()) {
        Entry e;
        e.kind = EntryKind::Directory;
        e.real_path = root_;
        if (::stat(root_.c_str(), &e.st) != 0) return std::nullopt;
        return e;
    }
    if (auto below = resolve_below_folder_view(virtual_path)) return *below;
    auto slash = virtual_path.rfind('/');
    std::string dir = slash == std::string::npos ? std::string() : virtual_path.substr(0, slash);
    std::string name = slash == std::string::npos ? virtual_path : virtual_path.substr(slash + 1);
    return resolve_in(join(root_, dir), name);
}

std::optional<Entry> Catalog::resolve_in(const std::string& real_dir, const std::string& name) {
    if (name.empty() || name == "." || name == ".." || !unservable_name_reason(name).empty()) return std::nullopt;
    Entry e;
    e.real_path = join(real_dir, name);
    if (stat_within_source(e.real_path, e.st)) {
        if (S_ISDIR(e.st.st_mode)) {
            if (is_store_directory(name, e.real_path)) return std::nullopt;  // shown as its views, not as a folder
            e.kind = EntryKind::Directory;
            return e;
        }
        if (!S_ISREG(e.st.st_mode)) return std::nullopt;  // devices, fifos, sockets are not served
        e.kind = EntryKind::RealFile;
        e.size = static_cast<uint64_t>(e.st.st_size);
        if (!nc_view_enabled()) return e;
        if (ends_with(name, ".nc")) {
            // A partition looked up costs the magic sniff and the attribute-name pre-check only.
            auto c = classify(e.real_path, e.st);
            if (c.kind == Classification::Aggregation) {
                e.kind = EntryKind::View;
                e.view = "nc";
                e.name = name;
                e.aggregation = true;
                e.size = c.nc_size;
            }
            return e;
        }
        if (ends_with(name, ".nca")) {
            auto c = classify(e.real_path, e.st);
            if (c.kind != Classification::Aggregation) return e;
            // An aggregation NAME.nca is shown as NAME.nc, unless a real NAME.nc is there.
            struct stat twin {};
            std::string nc_name = name.substr(0, name.size() - 4) + ".nc";
            if (stat_within_source(join(real_dir, nc_name), twin)) return e;
            return std::nullopt;
        }
        return e;
    }
    return resolve_twin(real_dir, name);
}

// A name with no real file behind it: a twin, classic or LOD view
// (fs/view_names.hpp), of the first dataset source that could give it.
std::optional<Entry> Catalog::resolve_twin(const std::string& real_dir, const std::string& name) {
    std::optional<Entry> classic;
    std::optional<std::pair<Entry, Classification>> found;  // the source the probe last accepted
    ViewNameProbe probe;
    probe.view_enabled = [&](const std::string& view) { return options_.has_view(view); };
    probe.lods = options_.lods;
    probe.is_dataset = [&](const std::string& candidate) {
        found = dataset_source(real_dir, candidate);
        return found.has_value();
    };
    probe.gives_classic = [&](const std::string&) {
        classic = resolve_classic_view(real_dir, name);
        return classic.has_value();
    };
    probe.glob_sources = [&](const std::string& stem) { return glob_sources(real_dir, stem); };
    auto resolved = resolve_view_name(name, probe);
    if (!resolved) return std::nullopt;
    if (resolved->classic) return classic;
    auto& [v, c] = *found;
    v.view = resolved->view;
    v.name = name;
    v.lod = resolved->lod;
    if (v.lod > 0 && !dataset_has_lods(v.real_path, v.st, v.aggregation)) return std::nullopt;
    if (view_format_named(v.view, "view").folder) {
        v.kind = EntryKind::ViewFolder;
        if (!folder_view_servable(v)) return std::nullopt;
        return v;
    }
    if (v.lod == 0 && v.aggregation && v.view == "nc") {
        v.size = c.nc_size;
        return v;
    }
    if (!view_servable(v)) return std::nullopt;
    return v;
}

std::optional<std::pair<Entry, Classification>> Catalog::dataset_source(const std::string& real_dir,
                                                                         const std::string& candidate) {
    Entry v;
    v.real_path = join(real_dir, candidate);
    if (!stat_within_source(v.real_path, v.st)) return std::nullopt;
    if (!S_ISREG(v.st.st_mode) && !(S_ISDIR(v.st.st_mode) && is_store_directory(candidate, v.real_path)))
        return std::nullopt;
    auto c = classify(v.real_path, v.st);
    if (!c.is_dataset()) return std::nullopt;
    v.kind = EntryKind::View;
    v.aggregation = c.kind == Classification::Aggregation;
    return std::make_pair(std::move(v), c);
}

std::vector<Catalog::LodName> Catalog::lod_names(const std::string& stem, const std::string& path,
                                                 const struct stat& st, bool aggregation) {
    std::vector<LodName> out;
    if (options_.lods == 0 || !dataset_has_lods(path, st, aggregation)) return out;
    for (int n = 1; n <= options_.lods; ++n)
        for (const auto& format : view_formats())
            if (options_.has_view(format.extension))
                out.push_back({lod_name(stem, n, format.extension), format.extension, n});
    return out;
}

namespace {

// A failure that may pass by itself (descriptors or memory short, a file
// changing meanwhile): not remembered as the view's verdict.
bool may_pass(const std::exception& ex) {
    const std::string what = ex.what();
    for (int e : {EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR})
        if (what.find(std::strerror(e)) != std::string::npos) return true;
    return what.find("changed while it was being opened") != std::string::npos ||
           dynamic_cast<const std::bad_alloc*>(&ex) != nullptr;
}

}  // namespace

bool Catalog::dataset_has_lods(const std::string& path, const struct stat& st, bool aggregation) {
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

bool Catalog::view_servable(Entry& v, bool need_size) {
    const ViewKey key = view_key(v.real_path, v.st, v.aggregation, v.view, v.name, v.lod);
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

std::optional<bool> Catalog::judge_cheaply(const Entry& v) {
    bool remembered = true;
    if (!readable_dataset(v.real_path, v.st, v.aggregation, remembered)) {
        if (remembered) refuse_view(v);
        return false;
    }
    std::optional<std::string> refusal;
    try {
        refusal = backend_.cheap_verdict(*dataset_at(v.real_path, v.st, v.aggregation, v.lod), v.view);
    } catch (const std::exception& ex) {
        if (may_pass(ex)) return false;
        refusal = ex.what();
    }
    if (!refusal) return std::nullopt;
    if (!refusal->empty()) {
        log_once(LogLevel::Debug, v.real_path + ": no " + v.name + " view: " + *refusal);
        refuse_view(v);
        return false;
    }
    MutexLock lock(mutex_);
    view_verdicts_.put(view_key(v.real_path, v.st, v.aggregation, v.view, v.name, v.lod), true);
    return true;
}

std::shared_ptr<const Dataset> Catalog::readable_dataset(const std::string& path, const struct stat& st,
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
        remembered = !may_pass(ex);
        MutexLock lock(mutex_);
        if (remembered) unreadable_.put(key, true);
        return nullptr;
    }
}

bool Catalog::size_view(Entry& v) {
    bool remembered = true;
    if (!readable_dataset(v.real_path, v.st, v.aggregation, remembered)) {
        if (remembered) refuse_view(v);
        return false;
    }
    try {
        v.size = view_of(v.real_path, v.st, v.aggregation, v.view, v.name, v.lod)->size();
    } catch (const std::exception& ex) {
        // A dataset this view cannot hold (no VDS type, too many chunks...): a
        // fact about the dataset, not something to act on; one claiming more
        // memory than its budget is a warning (an operator may raise the bound).
        const bool budget = dynamic_cast<const MetadataBudgetError*>(&ex) != nullptr;
        log_once(budget ? LogLevel::Warning : LogLevel::Debug, v.real_path + ": no " + v.name + " view: " + ex.what());
        if (!may_pass(ex)) refuse_view(v);
        return false;
    }
    return true;
}

void Catalog::refuse_view(const Entry& v) {
    MutexLock lock(mutex_);
    view_verdicts_.put(view_key(v.real_path, v.st, v.aggregation, v.view, v.name, v.lod), false);
}

// NAME.classic.nc: the nc view of a netCDF-4 file NAME.nc that is not an aggregation.
std::optional<Entry> Catalog::resolve_classic_view(const std::string& real_dir, const std::string& name) {
    const std::string suffix = kClassicSuffix;
    if (!(name.size() > suffix.size() && ends_with(name, suffix))) return std::nullopt;
    Entry v;
    v.real_path = join(real_dir, name.substr(0, name.size() - suffix.size()) + ".nc");
    if (!stat_within_source(v.real_path, v.st) || !S_ISREG(v.st.st_mode) || !is_netcdf4(v.real_path, v.st))
        return std::nullopt;
    // An aggregation NAME.nc shows its nc view under its own name: no second name for the same bytes.
    if (classify(v.real_path, v.st).kind != Classification::Dataset) return std::nullopt;
    v.kind = EntryKind::View;
    v.view = "nc";
    v.name = name;
    if (!view_servable(v)) return std::nullopt;
    return v;
}

bool Catalog::is_netcdf4(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = netcdf4_.get(key)) return *hit;
    }
    bool hdf5 = has_hdf5_signature(path, *confined_);
    MutexLock lock(mutex_);
    netcdf4_.put(key, hdf5);
    return hdf5;
}

namespace {

// One directory entry as readdir gives it.
struct RawEntry {
    std::string name;
    unsigned char type;
};

// The entries of real_dir, without . and .., read from `dir` (opened confined).
std::vector<RawEntry> read_directory(const UniqueFd& dir, const std::string& real_dir) {
    UniqueFd copy(::dup(dir.get()));
    if (!copy) throw std::system_error(errno, std::generic_category(), real_dir);
    DIR* d = ::fdopendir(copy.get());
    if (!d) throw std::system_error(errno, std::generic_category(), real_dir);
    copy.release();  // closedir closes it
    std::vector<RawEntry> raw;
    while (dirent* de = ::readdir(d)) {
        std::string name = de->d_name;
        if (name == "." || name == "..") continue;
        raw.push_back({std::move(name), de->d_type});
    }
    ::closedir(d);
    return raw;
}

}  // namespace

bool Catalog::only_reference_sets(const std::string& path) const {
    const std::string name = path.substr(path.rfind('/') + 1);
    return ends_with(name, ".json") || reference_glob_stem(name, options_.reference_globs);
}

std::optional<std::pair<std::string, int>> Catalog::listed_stem(const std::string& name) const {
    if (auto stem = source_stem(name)) return stem;
    return reference_glob_stem(name, options_.reference_globs);
}

std::vector<std::string> Catalog::glob_sources(const std::string& real_dir, const std::string& stem) {
    std::vector<std::string> out;
    if (options_.reference_globs.empty()) return out;
    OpenResult dir = confined_->open(real_dir, O_RDONLY | O_DIRECTORY);
    if (!dir.fd) return out;
    for (const auto& entry : read_directory(dir.fd, real_dir))
        if (auto s = reference_glob_stem(entry.name, options_.reference_globs); s && s->first == stem)
            out.push_back(entry.name);
    std::sort(out.begin(), out.end());
    return out;
}

// Dataset files by stem, in kSourceSuffixes order, for the twins.
struct Catalog::ListedSource {
    int rank;
    std::string name;
    std::string path;
    struct stat st;
    bool aggregation;
};

std::vector<DirEntry> Catalog::list(const std::string& virtual_dir) {
    std::string real_dir = join(root_, virtual_dir);
    OpenResult dir = confined_->open(real_dir, O_RDONLY | O_DIRECTORY);
    if (!dir.fd) throw std::system_error(dir.error, std::generic_category(), real_dir + ": " + dir.reason);
    std::vector<RawEntry> raw = read_directory(dir.fd, real_dir);
    std::set<std::string> names;
    for (const auto& r : raw) names.insert(r.name);

    std::vector<DirEntry> out;
    out.reserve(raw.size());
    std::vector<ListedSource> sources;
    for (auto& r : raw) {
        std::string path = join(real_dir, r.name);
        if (std::string why = unservable_name_reason(r.name); !why.empty()) {
            log_once(LogLevel::Warning, path + ": not shown: " + why);
            continue;
        }
        unsigned char type = r.type;
        struct stat st {};
        bool have_stat = false;
        // A dataset name in the folder: one fstatat from the folder's fd (a
        // single component, no symlink followed), no walk from SOURCE again.
        if (type == DT_REG && source_stem(r.name)) {
            if (::fstatat(dir.fd.get(), r.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            have_stat = S_ISREG(st.st_mode);
            if (!have_stat) type = S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;  // replaced meanwhile
        }
        if (type == DT_LNK || type == DT_UNKNOWN) {
            if (!stat_within_source(path, st)) continue;
            have_stat = true;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        if (type == DT_DIR) {
            if (is_store_directory(r.name, path) && (have_stat || stat_within_source(path, st)))
                sources.push_back({source_stem(r.name)->second, r.name, path, st, false});  // its views only
            else
                out.push_back({r.name, true});
        } else if (type == DT_REG && list_regular_file(r.name, path, st, have_stat, names, sources)) {
            out.push_back({r.name, false});
        }
    }
    list_twins(sources, names, out);
    return out;
}

bool Catalog::list_regular_file(const std::string& name, const std::string& path, struct stat& st, bool have_stat,
                                const std::set<std::string>& names, std::vector<ListedSource>& sources) {
    auto stem_rank = listed_stem(name);
    if (!stem_rank) return true;
    const auto& [stem, rank] = *stem_rank;
    if (!have_stat && !stat_within_source(path, st)) return false;
    // NAME.nca is classified fully (it may be shown as NAME.nc); any
    // other dataset name costs one magic sniff: a NAME.nc keeps its
    // name whatever it holds. Its twins exist for any netCDF magic,
    // except when it is a broken aggregation (no twins): a NAME.nc
    // passing the header pre-check is classified to find out.
    bool shown = true;
    bool is_dataset;
    bool aggregation = false;
    if (rank == 1) {
        auto c = classify(path, st);
        is_dataset = c.is_dataset();
        aggregation = c.kind == Classification::Aggregation;
        if (aggregation && nc_view_enabled() && !names.count(stem + ".nc")) shown = false;  // appears as its twin NAME.nc
    } else {
        const SourceFormat format = sniff(path, st);
        is_dataset = format != SourceFormat::None;
        if (is_dataset && ((rank == 0 && may_be_aggregation(path, st)) || format == SourceFormat::ReferenceSet)) {
            auto c = classify(path, st);
            is_dataset = c.is_dataset();
            aggregation = c.kind == Classification::Aggregation;
        }
    }
    if (is_dataset) sources.push_back({rank, name, path, st, aggregation});
    return shown;
}

void Catalog::list_twins(std::vector<ListedSource>& sources, const std::set<std::string>& names,
                         std::vector<DirEntry>& out) {
    std::stable_sort(sources.begin(), sources.end(),
                     [](const ListedSource& a, const ListedSource& b) { return a.rank < b.rank; });
    // A name belongs to the first source that could give it (as a lookup
    // finds it), and is listed only when that source's view can be served.
    std::set<std::string> claimed, lod_stems;
    auto offer = [&](const ListedSource& s, const std::string& name, const std::string& view, int lod) {
        if (names.count(name) || !claimed.insert(name).second) return;
        if (std::string why = unservable_name_reason(name); !why.empty()) {
            log_once(LogLevel::Warning, s.path + ": its view " + name + " is not shown: " + why);
            return;
        }
        Entry v;
        v.kind = EntryKind::View;
        v.real_path = s.path;
        v.st = s.st;
        v.aggregation = s.aggregation;
        v.view = view;
        v.name = name;
        v.lod = lod;
        if (view_format_named(view, "view").folder) {
            v.kind = EntryKind::ViewFolder;
            if (folder_view_servable(v)) out.push_back({name, true});
            return;
        }
        // An aggregation's nc view was built when it was classified.
        if ((s.aggregation && view == "nc" && lod == 0) || view_servable(v, false)) out.push_back({name, false});
    };
    for (const auto& s : sources) {
        std::string stem = listed_stem(s.name)->first;
        for (const auto& format : view_formats()) {
            const std::string v = format.extension;
            if (!options_.has_view(v)) continue;
            std::string twin = twin_name(stem, v);
            if (twin == s.name) continue;
            if (names.count(twin)) {
                log_once(LogLevel::Debug, s.path + ": its " + v + " view is not shown because " + twin +
                                              " exists beside it (the real file wins)");
                continue;
            }
            offer(s, twin, v, 0);
        }
        // LOD names from the first source of a stem only, as resolve_view_name finds it.
        if (lod_stems.insert(stem).second)
            for (const auto& lod : lod_names(stem, s.path, s.st, s.aggregation)) offer(s, lod.name, lod.view, lod.level);
        if (s.rank == 0 && !s.aggregation && nc_view_enabled() && is_netcdf4(s.path, s.st))
            offer(s, classic_name(stem), "nc", 0);
    }
}

std::shared_ptr<const VirtualFile> Catalog::open_view(const Entry& entry, uint64_t epoch) {
    if (view_format_named(entry.view, "view").folder) {
        // A member's file costs no more than its metadata: made at each open, from the cached layout.
        auto layout = zarr_layout(entry);
        const auto slash = entry.name.find('/');
        auto member = slash == std::string::npos ? std::nullopt : layout->member(entry.name.substr(slash + 1));
        if (!member) throw UsageError(entry.real_path + ": " + entry.name + " is no longer in its .zarr view");
        return agg::zarr_view::zarr_member_file(std::move(layout), *member);
    }
    return view_of(entry.real_path, entry.st, entry.aggregation, entry.view, entry.name, entry.lod, epoch);
}

std::optional<std::string> Catalog::absent_partition(const Entry& entry) {
    if (entry.kind != EntryKind::View || !entry.aggregation) return std::nullopt;
    auto files = source_files(entry);  // the aggregation file first, then its partitions
    if (!backend_.first_unreadable || files->size() < 2) return std::nullopt;
    const uint64_t generation = agg::DatasetCache::shared().generation();  // before the sweep
    const std::string aggregation = entry.real_path;
    auto answer = sweeps_.ask(file_key(entry.real_path, entry.st), generation, std::move(files),
                              backend_.first_unreadable, [aggregation](const std::string& absent) {
                                  log_once(LogLevel::Warning, aggregation + ": partition " + absent +
                                                                  " cannot be read: its views are served with direct I/O");
                              });
    if (!answer.known) return std::string();
    return answer.absent;
}

bool Catalog::draws_on_remote(const Entry& entry) {
    if (entry.kind != EntryKind::View || !entry.aggregation || !backend_.draws_on_remote) return false;
    // Asked at every open of a view (twice): the answer walks every partition,
    // and only the aggregation file (its identity is in the key) decides it.
    const DatasetKey key{file_key(entry.real_path, entry.st), true};
    {
        MutexLock lock(mutex_);
        if (auto hit = remote_datasets_.get(key)) return *hit;
    }
    const bool remote = backend_.draws_on_remote(*dataset(entry.real_path, entry.st, true));
    MutexLock lock(mutex_);
    remote_datasets_.put(key, remote);
    return remote;
}

std::shared_ptr<const std::vector<std::string>> Catalog::source_files(const Entry& entry) {
    // A view of a *.vds/ or *.zarr/ folder draws on its members, as an aggregation on its partitions.
    const bool vds_folder = S_ISDIR(entry.st.st_mode);
    if (entry.kind != EntryKind::View || (!entry.aggregation && !vds_folder))
        return std::make_shared<const std::vector<std::string>>(1, entry.real_path);
    const FileKey key = file_key(entry.real_path, entry.st);
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

struct stat Catalog::attributes(const Entry& entry) const {
    struct stat st = entry.st;
    st.st_ino = 0;  // filled in by the inode table
    st.st_blksize = kPreferredIoSize;
    if (entry.kind == EntryKind::View) {
        st.st_mode = S_IFREG | (entry.st.st_mode & 07555);  // the aggregation's mode minus write bits
        st.st_size = static_cast<off_t>(entry.size);
        st.st_blocks = static_cast<blkcnt_t>((entry.size + 511) / 512);
        st.st_nlink = 1;
    } else if (entry.kind == EntryKind::ViewFolder) {
        // A folder of a view: searchable by whoever may read its dataset file.
        const mode_t read = entry.st.st_mode & 0444;
        st.st_mode = S_IFDIR | read | (read >> 2);
        st.st_size = 0;
        st.st_blocks = 0;
        st.st_nlink = 2;
    }
    return st;
}

// ---- folder views (NAME.zarr) ----

DirEntry FolderListing::at(uint64_t i) const {
    auto [name, folder_entry] = layout->listing_entry(folder, i);
    return {std::move(name), folder_entry};
}

std::optional<std::optional<Entry>> Catalog::resolve_below_folder_view(const std::string& virtual_path) {
    size_t begin = 0;
    for (size_t slash; (slash = virtual_path.find('/', begin)) != std::string::npos; begin = slash + 1) {
        const std::string component = virtual_path.substr(begin, slash - begin);
        if (!ends_with(component, ".zarr")) continue;
        const std::string parent = begin == 0 ? std::string() : virtual_path.substr(0, begin - 1);
        auto store = resolve_in(join(root_, parent), component);
        if (store && store->kind == EntryKind::ViewFolder)
            return folder_view_member(*store, virtual_path.substr(slash + 1));
        if (!store || store->kind != EntryKind::Directory) return std::optional<Entry>();  // nothing below a file
    }
    return std::nullopt;
}

std::optional<Entry> Catalog::folder_view_member(const Entry& store, const std::string& member) {
    auto layout = zarr_layout(store);
    auto found = layout->member(member);
    if (!found) return std::nullopt;
    Entry e = store;
    e.name = store.name + "/" + member;
    if (found->kind == agg::zarr_view::ZarrMember::Kind::Folder) return e;
    e.kind = EntryKind::View;
    e.size = found->size();
    return e;
}

std::optional<FolderListing> Catalog::folder_listing(const std::string& virtual_dir) {
    if (virtual_dir.find(".zarr") == std::string::npos) return std::nullopt;  // no folder view on the path
    auto entry = resolve(virtual_dir);
    if (!entry || entry->kind != EntryKind::ViewFolder) return std::nullopt;
    auto layout = zarr_layout(*entry);
    const auto slash = entry->name.find('/');
    auto folder = layout->member(slash == std::string::npos ? std::string() : entry->name.substr(slash + 1));
    if (!folder) return std::nullopt;
    return FolderListing{std::move(layout), *folder};
}

std::shared_ptr<const agg::zarr_view::ZarrStoreLayout> Catalog::zarr_layout(const Entry& entry) {
    const ViewKey key = view_key(entry.real_path, entry.st, entry.aggregation, entry.view, std::string(), entry.lod);
    {
        MutexLock lock(mutex_);
        if (auto hit = zarr_layouts_.get(key)) return *hit;
    }
    // With zarr_chunks=stored, big-endian where values may lie in classic
    // files as they are (a classic file, the partitions of an aggregation:
    // spliced); else little-endian, computed, which every reader reads
    // (netcdf-c 4.9's NCZarr reads big-endian chunks unswapped).
    const bool classic = options_.zarr_chunks_stored &&
                         (entry.aggregation || (S_ISREG(entry.st.st_mode) &&
                                                sniff(entry.real_path, entry.st) == SourceFormat::Netcdf &&
                                                !is_netcdf4(entry.real_path, entry.st)));
    auto layout = std::make_shared<const agg::zarr_view::ZarrStoreLayout>(
        dataset_at(entry.real_path, entry.st, entry.aggregation, entry.lod), classic, options_.zarr_format,
        options_.zarr_chunks_stored);
    for (const auto& note : layout->notes()) log_once(LogLevel::Warning, entry.real_path + ": " + note);
    MutexLock lock(mutex_);
    zarr_layouts_.put(key, layout);
    return layout;
}

bool Catalog::folder_view_servable(const Entry& v) {
    // Remembered like the sizes of file views: listing again opens no dataset.
    const ViewKey key = view_key(v.real_path, v.st, v.aggregation, v.view, v.name, v.lod);
    {
        MutexLock lock(mutex_);
        if (auto verdict = view_verdicts_.get(key)) return *verdict;
    }
    bool remembered = true;
    if (!readable_dataset(v.real_path, v.st, v.aggregation, remembered)) {
        if (remembered) refuse_view(v);
        return false;
    }
    bool servable = true;
    try {
        zarr_layout(v);
    } catch (const std::exception& ex) {
        log_once(LogLevel::Debug, v.real_path + ": no " + v.name + " view: " + ex.what());
        if (may_pass(ex)) return false;
        servable = false;
    }
    MutexLock lock(mutex_);
    view_verdicts_.put(key, servable);
    return servable;
}

}  // namespace ncafs::fs
