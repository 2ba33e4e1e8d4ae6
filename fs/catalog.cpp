#include "fs/catalog.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <set>
#include <system_error>

#include "fs/aggregation_precheck.hpp"
#include "fs/log.hpp"

namespace ncafs::fs {

namespace {

constexpr size_t kClassificationCapacity = 200000;  // small entries: ~100 bytes each
constexpr blksize_t kBlockSize = 1 << 20;           // netcdf-c sizes its classic reads by st_blksize

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const std::string& dir, const std::string& name) {
    if (dir.empty()) return name;
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

FileIdentity identity_from(const struct stat& st) {
    return FileIdentity{st.st_dev, st.st_ino,
                        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                        static_cast<uint64_t>(st.st_size)};
}

std::string cache_key(const std::string& path, const struct stat& st) {
    auto id = identity_from(st);
    return path + '\0' + std::to_string(id.device) + ':' + std::to_string(id.inode) + ':' +
           std::to_string(id.mtime_ns) + ':' + std::to_string(id.size);
}

}  // namespace

FileIdentity Entry::identity() const { return identity_from(st); }

template <typename Value>
std::optional<Value> Catalog::Lru<Value>::get(const std::string& key) {
    auto it = index.find(key);
    if (it == index.end()) return std::nullopt;
    order.splice(order.begin(), order, it->second);
    return it->second->second;
}

template <typename Value>
void Catalog::Lru<Value>::put(const std::string& key, Value value) {
    auto it = index.find(key);
    if (it != index.end()) {
        it->second->second = std::move(value);
        order.splice(order.begin(), order, it->second);
        return;
    }
    order.emplace_front(key, std::move(value));
    index[key] = order.begin();
    while (order.size() > capacity) {
        index.erase(order.back().first);
        order.pop_back();
    }
}

Catalog::Catalog(std::string source_root, ViewOptions options, Backend backend)
    : root_(std::move(source_root)), options_(std::move(options)), backend_(std::move(backend)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    classifications_.capacity = kClassificationCapacity;
    views_.capacity = options_.open_files;
    for (const auto& v : options_.views)
        if (v != "nc") log_once(LogLevel::Warning, "view '" + v + "' is not available in this build; serving nc only");
}

bool Catalog::nc_view_enabled() const {
    return std::find(options_.views.begin(), options_.views.end(), "nc") != options_.views.end();
}

size_t Catalog::classification_count() const {
    std::lock_guard lock(mutex_);
    return classification_count_;
}

bool Catalog::stat_within_source(const std::string& path, struct stat& st) const {
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) != 0) return false;
    if (!S_ISLNK(lst.st_mode)) {
        st = lst;
        return true;
    }
    // Symlinks are followed, but only to targets inside SOURCE: the mount
    // must not become a window onto the rest of the machine.
    char resolved[PATH_MAX];
    if (!::realpath(path.c_str(), resolved)) return false;
    std::string target(resolved);
    if (target != root_ && !(target.size() > root_.size() && target.compare(0, root_.size(), root_) == 0 &&
                             (root_ == "/" || target[root_.size()] == '/')))
        return false;
    return ::stat(path.c_str(), &st) == 0;
}

Classification Catalog::classify(const std::string& path, const struct stat& st) {
    std::string key = cache_key(path, st);
    {
        std::lock_guard lock(mutex_);
        if (auto hit = classifications_.get(key)) return *hit;
    }
    Classification c;
    std::shared_ptr<const VirtualFile> view;
    if (precheck_aggregation(path) == Precheck::Maybe) {
        try {
            if (backend_.is_aggregation(path)) {
                view = backend_.open_view(path, "nc");
                c.kind = Classification::Aggregation;
                c.nc_size = view->size();
            }
        } catch (const std::exception& e) {
            c.kind = Classification::Broken;
            log_once(LogLevel::Warning, path + ": shown as a plain file, not as an aggregation: " + e.what());
        } catch (...) {
            c.kind = Classification::Broken;
            log_once(LogLevel::Warning, path + ": shown as a plain file, not as an aggregation: unknown error");
        }
    }
    std::lock_guard lock(mutex_);
    ++classification_count_;
    classifications_.put(key, c);
    if (view) views_.put(key + std::string("\0nc", 3), view);
    return c;
}

std::optional<Entry> Catalog::resolve(const std::string& virtual_path) {
    if (virtual_path.empty()) {
        Entry e;
        e.kind = EntryKind::Directory;
        e.real_path = root_;
        if (::stat(root_.c_str(), &e.st) != 0) return std::nullopt;
        return e;
    }
    auto slash = virtual_path.rfind('/');
    std::string dir = slash == std::string::npos ? std::string() : virtual_path.substr(0, slash);
    std::string name = slash == std::string::npos ? virtual_path : virtual_path.substr(slash + 1);
    return resolve_in(join(root_, dir), name);
}

std::optional<Entry> Catalog::resolve_in(const std::string& real_dir, const std::string& name) {
    if (name.empty() || name == "." || name == "..") return std::nullopt;
    Entry e;
    e.real_path = join(real_dir, name);
    if (stat_within_source(e.real_path, e.st)) {
        if (S_ISDIR(e.st.st_mode)) {
            e.kind = EntryKind::Directory;
            return e;
        }
        if (!S_ISREG(e.st.st_mode)) return std::nullopt;  // devices, fifos, sockets are not served
        e.kind = EntryKind::RealFile;
        e.size = static_cast<uint64_t>(e.st.st_size);
        if (!nc_view_enabled()) return e;
        if (ends_with(name, ".nc")) {
            auto c = classify(e.real_path, e.st);
            if (c.kind == Classification::Aggregation) {
                e.kind = EntryKind::View;
                e.view = "nc";
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
    if (!nc_view_enabled() || !ends_with(name, ".nc") || name.size() == 3) return std::nullopt;
    Entry v;
    v.real_path = join(real_dir, name.substr(0, name.size() - 3) + ".nca");
    if (!stat_within_source(v.real_path, v.st) || !S_ISREG(v.st.st_mode)) return std::nullopt;
    auto c = classify(v.real_path, v.st);
    if (c.kind != Classification::Aggregation) return std::nullopt;
    v.kind = EntryKind::View;
    v.view = "nc";
    v.size = c.nc_size;
    return v;
}

std::vector<DirEntry> Catalog::list(const std::string& virtual_dir) {
    std::string real_dir = join(root_, virtual_dir);
    DIR* d = ::opendir(real_dir.c_str());
    if (!d) throw std::system_error(errno, std::generic_category(), real_dir);
    struct Raw {
        std::string name;
        unsigned char type;
    };
    std::vector<Raw> raw;
    std::set<std::string> names;
    while (dirent* de = ::readdir(d)) {
        std::string name = de->d_name;
        if (name == "." || name == "..") continue;
        names.insert(name);
        raw.push_back({std::move(name), de->d_type});
    }
    ::closedir(d);

    std::vector<DirEntry> out;
    out.reserve(raw.size());
    for (auto& r : raw) {
        std::string path = join(real_dir, r.name);
        unsigned char type = r.type;
        struct stat st {};
        bool have_stat = false;
        if (type == DT_LNK || type == DT_UNKNOWN) {
            if (!stat_within_source(path, st)) continue;
            have_stat = true;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        if (type == DT_DIR) {
            out.push_back({r.name, true});
            continue;
        }
        if (type != DT_REG) continue;
        // Only NAME.nca needs classifying to be listed: a NAME.nc keeps its
        // name whatever it holds, so a directory of partitions costs no I/O.
        if (nc_view_enabled() && ends_with(r.name, ".nca") && r.name.size() > 4) {
            if (!have_stat && ::stat(path.c_str(), &st) != 0) continue;
            if (classify(path, st).kind == Classification::Aggregation) {
                std::string nc_name = r.name.substr(0, r.name.size() - 4) + ".nc";
                if (names.count(nc_name)) {
                    log_once(LogLevel::Warning, path + ": aggregation shown under its own name because " + nc_name +
                                                    " exists beside it (the real file wins)");
                } else {
                    out.push_back({nc_name, false});
                    continue;
                }
            }
        }
        out.push_back({r.name, false});
    }
    return out;
}

std::shared_ptr<const VirtualFile> Catalog::open_view(const Entry& entry) {
    std::string key = cache_key(entry.real_path, entry.st) + std::string("\0", 1) + entry.view;
    {
        std::lock_guard lock(mutex_);
        if (auto hit = views_.get(key)) return *hit;
    }
    auto view = backend_.open_view(entry.real_path, entry.view);
    std::lock_guard lock(mutex_);
    views_.put(key, view);
    return view;
}

struct stat Catalog::attributes(const Entry& entry) const {
    struct stat st = entry.st;
    st.st_ino = 0;  // filled in by the inode table
    st.st_blksize = kBlockSize;
    if (entry.kind == EntryKind::View) {
        st.st_mode = S_IFREG | (entry.st.st_mode & 07555);  // the aggregation's mode minus write bits
        st.st_size = static_cast<off_t>(entry.size);
        st.st_blocks = static_cast<blkcnt_t>((entry.size + 511) / 512);
        st.st_nlink = 1;
    }
    return st;
}

}  // namespace ncafs::fs
