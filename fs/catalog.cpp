#include "fs/catalog.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "fs/log.hpp"
#include "fs/view_names.hpp"

namespace ncafs::fs {

namespace {

// st_blksize: netcdf-c sizes its classic-file reads from it (4 x st_blksize
// per request), cat and cp read max(128 KiB, st_blksize). At 1 MiB netcdf-c
// read 4 MiB per request; at 64 KiB clients issue local-file-sized reads
// (tests/bench/netcdf_clients_bench.py) and cat keeps its throughput: the
// kernel's readahead (128 KiB bdi default) sizes the FUSE requests anyway.
// What the daemon computes per request is its own affair (ViewBlockCache and
// Readahead, view_block_cache.hpp and readahead.hpp).
constexpr blksize_t kPreferredIoSize = 64 << 10;

// The backend, sniffing confined to SOURCE unless it sniffs its own way.
Backend with_confined_sniff(Backend backend, std::shared_ptr<const ConfinedRoots> source) {
    if (!backend.sniff)
        backend.sniff = [source](const std::string& path) { return sniff_source_format(path, source.get()); };
    return backend;
}

}  // namespace

Catalog::Catalog(std::string source_root, ViewOptions options, Backend backend)
    : root_(lexically_normal_absolute(source_root)),
      confined_(std::make_shared<const ConfinedRoots>(std::vector<std::string>{root_})),
      options_(std::move(options)),
      backend_(with_confined_sniff(std::move(backend), confined_)),
      views_(*confined_, options_, backend_),
      classifier_(*confined_, options_, backend_, views_),
      folders_(options_, classifier_, views_),
      listing_(root_, *confined_, options_, classifier_, views_, folders_) {}

bool Catalog::nc_view_enabled() const { return options_.has_view("nc"); }

OpenResult Catalog::open_real_file(const Entry& entry) {
    OpenResult r = open_regular_file(entry.real_path, confined_.get());
    if (!r.fd && (r.error == EMFILE || r.error == ENFILE) && dataset_cache().drop_idle() > 0)
        r = open_regular_file(entry.real_path, confined_.get());
    return r;
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
    return resolve_in(child_path(root_, dir), name);
}

std::optional<Entry> Catalog::resolve_in(const std::string& real_dir, const std::string& name) {
    if (name.empty() || name == "." || name == ".." || !unservable_name_reason(name).empty()) return std::nullopt;
    Entry e;
    e.real_path = child_path(real_dir, name);
    if (!classifier_.stat_within_source(e.real_path, e.st)) return resolve_twin(real_dir, name);
    if (S_ISDIR(e.st.st_mode)) {
        // A store folder is shown as its views, not as a folder.
        if (classifier_.is_store_directory(name, e.real_path)) return std::nullopt;
        e.kind = EntryKind::Directory;
        return e;
    }
    if (!S_ISREG(e.st.st_mode)) return std::nullopt;  // devices, fifos, sockets are not served
    e.kind = EntryKind::RealFile;
    e.size = static_cast<uint64_t>(e.st.st_size);
    if (!nc_view_enabled()) return e;
    if (name.ends_with(".nc")) {
        // A partition looked up costs the magic sniff and the attribute-name pre-check only.
        auto c = classifier_.classify(e.real_path, e.st);
        if (c.kind == Classification::Aggregation) {
            e.kind = EntryKind::View;
            e.view_kind = ViewKind::Nc;
            e.name = name;
            e.aggregation = true;
            e.size = c.nc_size;
        }
        return e;
    }
    if (name.ends_with(".nca")) {
        auto c = classifier_.classify(e.real_path, e.st);
        if (c.kind != Classification::Aggregation) return e;
        // An aggregation NAME.nca is shown as NAME.nc, unless a real NAME.nc is there.
        struct stat twin {};
        std::string nc_name = name.substr(0, name.size() - 4) + ".nc";
        if (classifier_.stat_within_source(child_path(real_dir, nc_name), twin)) return e;
        return std::nullopt;
    }
    return e;
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
    probe.glob_sources = [&](const std::string& stem) { return listing_.glob_sources(real_dir, stem); };
    auto resolved = resolve_view_name(name, probe);
    if (!resolved) return std::nullopt;
    if (resolved->classic) return classic;
    auto& [v, c] = *found;
    v.view_kind = view_kind_of(resolved->view);
    v.name = name;
    v.lod = resolved->lod;
    if (v.lod > 0 && !views_.dataset_has_lods(v.real_path, v.st, v.aggregation)) return std::nullopt;
    if (view_format(v.view_kind).folder) {
        v.kind = EntryKind::ViewFolder;
        if (!folders_.servable(v)) return std::nullopt;
        return v;
    }
    if (v.lod == 0 && v.aggregation && v.view_kind == ViewKind::Nc) {
        v.size = c.nc_size;
        return v;
    }
    if (!views_.view_servable(v)) return std::nullopt;
    return v;
}

std::optional<std::pair<Entry, Classification>> Catalog::dataset_source(const std::string& real_dir,
                                                                         const std::string& candidate) {
    Entry v;
    v.real_path = child_path(real_dir, candidate);
    if (!classifier_.stat_within_source(v.real_path, v.st)) return std::nullopt;
    if (!S_ISREG(v.st.st_mode) && !(S_ISDIR(v.st.st_mode) && classifier_.is_store_directory(candidate, v.real_path)))
        return std::nullopt;
    auto c = classifier_.classify(v.real_path, v.st);
    if (!c.is_dataset()) return std::nullopt;
    v.kind = EntryKind::View;
    v.aggregation = c.kind == Classification::Aggregation;
    return std::make_pair(std::move(v), c);
}

// NAME.classic.nc: the nc view of a netCDF-4 file NAME.nc that is not an aggregation.
std::optional<Entry> Catalog::resolve_classic_view(const std::string& real_dir, const std::string& name) {
    const std::string suffix = kClassicSuffix;
    if (!(name.size() > suffix.size() && name.ends_with(suffix))) return std::nullopt;
    Entry v;
    v.real_path = child_path(real_dir, name.substr(0, name.size() - suffix.size()) + ".nc");
    if (!classifier_.stat_within_source(v.real_path, v.st) || !S_ISREG(v.st.st_mode) ||
        !classifier_.is_netcdf4(v.real_path, v.st))
        return std::nullopt;
    // An aggregation NAME.nc shows its nc view under its own name: no second name for the same bytes.
    if (classifier_.classify(v.real_path, v.st).kind != Classification::Dataset) return std::nullopt;
    v.kind = EntryKind::View;
    v.view_kind = ViewKind::Nc;
    v.name = name;
    if (!views_.view_servable(v)) return std::nullopt;
    return v;
}

std::optional<std::optional<Entry>> Catalog::resolve_below_folder_view(const std::string& virtual_path) {
    size_t begin = 0;
    for (size_t slash; (slash = virtual_path.find('/', begin)) != std::string::npos; begin = slash + 1) {
        const std::string component = virtual_path.substr(begin, slash - begin);
        if (!component.ends_with(".zarr")) continue;
        const std::string parent = begin == 0 ? std::string() : virtual_path.substr(0, begin - 1);
        auto store = resolve_in(child_path(root_, parent), component);
        if (store && store->kind == EntryKind::ViewFolder)
            return folders_.member(*store, virtual_path.substr(slash + 1));
        if (!store || store->kind != EntryKind::Directory) return std::optional<Entry>();  // nothing below a file
    }
    return std::nullopt;
}

std::optional<FolderListing> Catalog::folder_listing(const std::string& virtual_dir) {
    if (virtual_dir.find(".zarr") == std::string::npos) return std::nullopt;  // no folder view on the path
    auto entry = resolve(virtual_dir);
    if (!entry || entry->kind != EntryKind::ViewFolder) return std::nullopt;
    return folders_.listing(*entry);
}

std::shared_ptr<const VirtualFile> Catalog::open_view(const Entry& entry, uint64_t epoch) {
    if (view_format(entry.view_kind).folder) return folders_.open_member(entry);
    return views_.view_of(entry, epoch);
}

std::optional<std::string> Catalog::absent_partition(const Entry& entry) {
    if (entry.kind != EntryKind::View || !entry.aggregation) return std::nullopt;
    auto files = source_files(entry);  // the aggregation file first, then its partitions
    if (!backend_.first_unreadable || files->size() < 2) return std::nullopt;
    const uint64_t generation = dataset_cache().generation();  // before the sweep
    const std::string aggregation = entry.real_path;
    auto answer = sweeps_.ask(entry.file_key(), generation, std::move(files), backend_.first_unreadable,
                              [aggregation](const std::string& absent) {
                                  log_once(LogLevel::Warning, aggregation + ": partition " + absent +
                                                                  " cannot be read: its views are served with direct I/O");
                              });
    if (!answer.known) return std::string();
    return answer.absent;
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

}  // namespace ncafs::fs
