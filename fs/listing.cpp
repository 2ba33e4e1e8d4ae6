#include "fs/listing.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "fs/backend.hpp"
#include "fs/file_classifier.hpp"
#include "fs/folder_views.hpp"
#include "fs/log.hpp"
#include "fs/view_names.hpp"
#include "fs/view_store.hpp"

namespace ncafs::fs {

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

std::string child_path(const std::string& dir, const std::string& name) {
    if (dir.empty()) return name;
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Dataset files by stem, in kSourceSuffixes order, for the twins.
struct Listing::ListedSource {
    int rank;
    std::string name;
    std::string path;
    struct stat st;
    bool aggregation;
};

Listing::Listing(const std::string& root, const ConfinedRoots& source, const ViewOptions& options,
                 FileClassifier& classifier, ViewStore& views, FolderViews& folders)
    : root_(root), source_(source), options_(options), classifier_(classifier), views_(views), folders_(folders) {}

std::optional<std::pair<std::string, int>> Listing::listed_stem(const std::string& name) const {
    if (auto stem = source_stem(name)) return stem;
    return reference_glob_stem(name, options_.reference_globs);
}

std::vector<std::string> Listing::glob_sources(const std::string& real_dir, const std::string& stem) {
    std::vector<std::string> out;
    if (options_.reference_globs.empty()) return out;
    OpenResult dir = source_.open(real_dir, O_RDONLY | O_DIRECTORY);
    if (!dir.fd) return out;
    for (const auto& entry : read_directory(dir.fd, real_dir))
        if (auto s = reference_glob_stem(entry.name, options_.reference_globs); s && s->first == stem)
            out.push_back(entry.name);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<DirEntry> Listing::list(const std::string& virtual_dir) {
    std::string real_dir = child_path(root_, virtual_dir);
    OpenResult dir = source_.open(real_dir, O_RDONLY | O_DIRECTORY);
    if (!dir.fd) throw std::system_error(dir.error, std::generic_category(), real_dir + ": " + dir.reason);
    std::vector<RawEntry> raw = read_directory(dir.fd, real_dir);
    std::set<std::string> names;
    for (const auto& r : raw) names.insert(r.name);

    std::vector<DirEntry> out;
    out.reserve(raw.size());
    std::vector<ListedSource> sources;
    for (auto& r : raw) {
        std::string path = child_path(real_dir, r.name);
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
            if (!classifier_.stat_within_source(path, st)) continue;
            have_stat = true;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        if (type == DT_DIR) {
            if (classifier_.is_store_directory(r.name, path) &&
                (have_stat || classifier_.stat_within_source(path, st)))
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

bool Listing::list_regular_file(const std::string& name, const std::string& path, struct stat& st, bool have_stat,
                                const std::set<std::string>& names, std::vector<ListedSource>& sources) {
    auto stem_rank = listed_stem(name);
    if (!stem_rank) return true;
    const auto& [stem, rank] = *stem_rank;
    if (!have_stat && !classifier_.stat_within_source(path, st)) return false;
    // NAME.nca is classified fully (it may be shown as NAME.nc); any
    // other dataset name costs one magic sniff: a NAME.nc keeps its
    // name whatever it holds. Its twins exist for any netCDF magic,
    // except when it is a broken aggregation (no twins): a NAME.nc
    // passing the header pre-check is classified to find out.
    bool shown = true;
    bool is_dataset;
    bool aggregation = false;
    if (rank == 1) {
        auto c = classifier_.classify(path, st);
        is_dataset = c.is_dataset();
        aggregation = c.kind == Classification::Aggregation;
        // An aggregation appears as its twin NAME.nc.
        if (aggregation && options_.has_view("nc") && !names.count(stem + ".nc")) shown = false;
    } else {
        const SourceFormat format = classifier_.sniff(path, st);
        is_dataset = format != SourceFormat::None;
        if (is_dataset &&
            ((rank == 0 && classifier_.may_be_aggregation(path, st)) || format == SourceFormat::ReferenceSet)) {
            auto c = classifier_.classify(path, st);
            is_dataset = c.is_dataset();
            aggregation = c.kind == Classification::Aggregation;
        }
    }
    if (is_dataset) sources.push_back({rank, name, path, st, aggregation});
    return shown;
}

bool Listing::view_listed(const ListedSource& s, const std::string& name, ViewKind kind, int lod) {
    Entry v;
    v.kind = EntryKind::View;
    v.real_path = s.path;
    v.st = s.st;
    v.aggregation = s.aggregation;
    v.view_kind = kind;
    v.name = name;
    v.lod = lod;
    if (view_format(kind).folder) {
        v.kind = EntryKind::ViewFolder;
        return folders_.servable(v);
    }
    // An aggregation's nc view was built when it was classified.
    return (s.aggregation && kind == ViewKind::Nc && lod == 0) || views_.view_servable(v, false);
}

void Listing::list_twins(std::vector<ListedSource>& sources, const std::set<std::string>& names,
                         std::vector<DirEntry>& out) {
    std::stable_sort(sources.begin(), sources.end(),
                     [](const ListedSource& a, const ListedSource& b) { return a.rank < b.rank; });
    // A name belongs to the first source that could give it (as a lookup
    // finds it), and is listed only when that source's view can be served.
    std::set<std::string> claimed, lod_stems;
    auto offer = [&](const ListedSource& s, const std::string& name, ViewKind kind, int lod) {
        if (names.count(name) || !claimed.insert(name).second) return;
        if (std::string why = unservable_name_reason(name); !why.empty()) {
            log_once(LogLevel::Warning, s.path + ": its view " + name + " is not shown: " + why);
            return;
        }
        if (view_listed(s, name, kind, lod)) out.push_back({name, view_format(kind).folder});
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
            offer(s, twin, format.kind, 0);
        }
        // LOD names from the first source of a stem only, as resolve_view_name finds it.
        if (lod_stems.insert(stem).second)
            for (const auto& lod : lod_names(stem, s.path, s.st, s.aggregation))
                offer(s, lod.name, lod.kind, lod.level);
        if (s.rank == 0 && !s.aggregation && options_.has_view("nc") && classifier_.is_netcdf4(s.path, s.st))
            offer(s, classic_name(stem), ViewKind::Nc, 0);
    }
}

std::vector<Listing::LodName> Listing::lod_names(const std::string& stem, const std::string& path,
                                                 const struct stat& st, bool aggregation) {
    std::vector<LodName> out;
    if (options_.lods == 0 || !views_.dataset_has_lods(path, st, aggregation)) return out;
    for (int n = 1; n <= options_.lods; ++n)
        for (const auto& format : view_formats())
            if (options_.has_view(format.extension))
                out.push_back({lod_name(stem, n, format.extension), format.kind, n});
    return out;
}

}  // namespace ncafs::fs
