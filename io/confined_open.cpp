#include "io/confined_open.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "io/mutex.hpp"

namespace ncafs {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = o.release();
    }
    return *this;
}

UniqueFd::~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
}

bool is_lexically_normal_absolute(std::string_view path) {
    if (path.empty() || path[0] != '/') return false;
    if (path.size() == 1) return true;
    if (path.back() == '/') return false;
    // Every component after a '/' must be non-empty and neither "." nor "..".
    for (size_t at = 0; at < path.size();) {
        const size_t next = std::min(path.find('/', at + 1), path.size());
        const std::string_view name = path.substr(at + 1, next - at - 1);
        if (name.empty() || name == "." || name == "..") return false;
        at = next;
    }
    return true;
}

std::string lexically_normal_absolute(const std::string& path) {
    if (is_lexically_normal_absolute(path)) return path;  // the common case: no std::filesystem::path to build
    std::filesystem::path p(path);
    if (p.is_relative()) p = std::filesystem::current_path() / p;
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

bool path_is_under(const std::string& path, const std::string& root) {
    if (root == "/") return !path.empty() && path[0] == '/';
    if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
    return path.size() == root.size() || path[root.size()] == '/';
}

namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel (MAXSYMLINKS)

OpenResult failure(int error, std::string reason = {}) {
    OpenResult r;
    r.error = error;
    r.refused_by_rule = !reason.empty();
    r.reason = reason.empty() ? std::strerror(error) : std::move(reason);
    return r;
}

OpenResult success(int fd) {
    OpenResult r;
    r.fd = UniqueFd(fd);
    return r;
}

const char* const kEscapes = "resolves (through symlinks) outside the allowed roots: refused";
const char* const kIntoMount = "leads into this mount itself (a file of the mount cannot be read by it): refused";

// The daemon's own mount (refuse_own_mount); set before any thread opens files.
struct OwnMount {
    std::string lexical, canonical;
    dev_t device = 0;
};
std::atomic<const OwnMount*> own_mount{nullptr};

bool under_own_mount(const std::string& normal) {
    const OwnMount* own = own_mount.load();
    return own && (path_is_under(normal, own->lexical) || path_is_under(normal, own->canonical));
}

// Whether a root holds the mount point: only then can a path beneath it (a
// symlink inside the root) reach the mount.
bool holds_own_mount(const std::string& root_lexical, const std::string& root_canonical) {
    const OwnMount* own = own_mount.load();
    return own && (path_is_under(own->lexical, root_lexical) || path_is_under(own->canonical, root_canonical));
}

// Whether fd lies in the mount, from the kernel's cached attributes (AT_STATX_DONT_SYNC: FUSE asks no daemon).
bool in_own_mount(int fd) {
    const OwnMount* own = own_mount.load();
    if (!own) return false;
    struct statx sx {};
    if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &sx) != 0) return false;
    return makedev(sx.stx_dev_major, sx.stx_dev_minor) == own->device;
}

int full_flags(int flags) { return (flags & O_PATH) ? (flags | O_CLOEXEC) : (flags | O_CLOEXEC | O_NONBLOCK); }

// Components of a relative path, in order ("" and "." dropped later).
void push_components(std::deque<std::string>& parts, const std::string& path) {
    std::deque<std::string> add;
    size_t start = 0;
    while (start <= path.size()) {
        size_t slash = path.find('/', start);
        if (slash == std::string::npos) slash = path.size();
        if (slash > start) add.push_back(path.substr(start, slash - start));
        start = slash + 1;
    }
    parts.insert(parts.begin(), add.begin(), add.end());
}

// The symlink target of `name` in `dir` (or of the O_PATH symlink fd itself
// when name is ""); false when it is not a symlink.
bool read_link(int dir, const std::string& name, std::string& target) {
    char buffer[PATH_MAX];
    ssize_t n = ::readlinkat(dir, name.c_str(), buffer, sizeof buffer);
    if (n < 0 || static_cast<size_t>(n) >= sizeof buffer) return false;
    target.assign(buffer, static_cast<size_t>(n));
    return true;
}

std::atomic<bool> openat2_missing{false};

// The roots' O_PATH descriptors, held process-wide (at most kMaxHeld: SOURCE
// and allow_root=), so that an open costs one openat2, not an open and a close
// of the root as well. A root is a trusted name; it is looked up by name
// again (one stat) at most once a second, and at once when an open beneath
// the held fd finds nothing (a root removed and made again), so a root
// replaced is followed within a second.
class RootDescriptors {
public:
    using Fd = std::shared_ptr<const UniqueFd>;
    // The held fd of root, opened (or reopened) when needed; null, errno set, when it cannot be opened.
    Fd get(const std::string& root, bool reopen) {
        const auto now = std::chrono::steady_clock::now();
        MutexLock lock(mutex_);
        auto it = held_.find(root);
        if (it != held_.end() && !reopen) {
            if (now - it->second.checked < kRecheck) return it->second.fd;
            struct stat st {};
            if (::stat(root.c_str(), &st) == 0 && st.st_dev == it->second.device && st.st_ino == it->second.inode) {
                it->second.checked = now;
                return it->second.fd;
            }
        }
        auto fd = std::make_shared<const UniqueFd>(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!*fd) {
            const int e = errno;
            held_.erase(root);
            errno = e;
            return nullptr;
        }
        struct stat st {};
        if (::fstat(fd->get(), &st) != 0) return fd;  // usable once, not held
        if (held_.size() >= kMaxHeld && !held_.count(root)) {  // the least recently checked goes (readers keep theirs)
            auto oldest = held_.begin();
            for (auto i = held_.begin(); i != held_.end(); ++i)
                if (i->second.checked < oldest->second.checked) oldest = i;
            held_.erase(oldest);
        }
        held_[root] = Held{fd, st.st_dev, st.st_ino, now};
        return fd;
    }

private:
    static constexpr std::chrono::seconds kRecheck{1};
    static constexpr size_t kMaxHeld = 4;  // SOURCE and a few allow_root= (the command line: one per aggregation)
    struct Held {
        Fd fd;
        dev_t device;
        ino_t inode;
        std::chrono::steady_clock::time_point checked;
    };
    Mutex mutex_;  // lock order: a leaf (system calls only)
    std::unordered_map<std::string, Held> held_ NCAFS_GUARDED_BY(mutex_);
};

RootDescriptors& root_descriptors() {
    static RootDescriptors* roots = new RootDescriptors;  // never destroyed: usable from any thread at exit
    return *roots;
}

}  // namespace

void ConfinedRoots::set_openat2_enabled(bool enabled) { openat2_missing = !enabled; }

void refuse_own_mount(const std::string& mountpoint, dev_t device) {
    auto* own = new OwnMount;  // never freed: read by every thread until the process ends
    own->lexical = lexically_normal_absolute(mountpoint);
    char resolved[PATH_MAX];
    own->canonical = ::realpath(own->lexical.c_str(), resolved) ? std::string(resolved) : own->lexical;
    own->device = device;
    own_mount = own;
}

ConfinedRoots::ConfinedRoots(const std::vector<std::string>& roots) {
    for (const auto& r : roots) {
        Root root;
        root.lexical = lexically_normal_absolute(r);
        char resolved[PATH_MAX];
        root.canonical = ::realpath(root.lexical.c_str(), resolved) ? std::string(resolved) : root.lexical;
        roots_.push_back(std::move(root));
    }
}

OpenResult ConfinedRoots::open(const std::string& path, int flags) const {
    std::string normalized;
    if (!is_lexically_normal_absolute(path)) normalized = lexically_normal_absolute(path);
    const std::string& normal = normalized.empty() ? path : normalized;
    if (under_own_mount(normal)) return failure(ELOOP, kIntoMount);
    for (const auto& root : roots_) {
        for (const std::string* prefix : {&root.lexical, &root.canonical}) {
            if (!path_is_under(normal, *prefix)) continue;
            std::string relative = normal.substr(prefix->size());
            while (!relative.empty() && relative[0] == '/') relative.erase(0, 1);
            for (bool reopen : {false, true}) {
                auto root_fd = root_descriptors().get(root.lexical, reopen);
                if (!root_fd) return failure(errno, "its root " + root.lexical + " cannot be opened: " + std::strerror(errno));
                OpenResult r = open_beneath(root, root_fd->get(), relative, flags);
                if (r.fd || reopen || (r.error != ENOENT && r.error != ESTALE)) return r;
            }
            return failure(ENOENT);
        }
    }
    return failure(EACCES, "is outside the allowed roots: refused");
}

std::string ConfinedRoots::root_of(const std::string& path) const {
    const std::string normal = lexically_normal_absolute(path);
    for (const auto& root : roots_)
        if (path_is_under(normal, root.lexical) || path_is_under(normal, root.canonical)) return root.lexical;
    return {};
}

OpenResult ConfinedRoots::open_beneath(const Root& root, int root_fd, const std::string& relative, int flags) const {
    if (!openat2_missing.load(std::memory_order_relaxed)) {
        open_how how{};
        how.flags = static_cast<uint64_t>(full_flags(flags));
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        // A root holding the mount point: no mount is crossed here; the walk checks each one it would cross.
        if (holds_own_mount(root.lexical, root.canonical)) how.resolve |= RESOLVE_NO_XDEV;
        const char* name = relative.empty() ? "." : relative.c_str();
        long fd = ::syscall(SYS_openat2, root_fd, name, &how, sizeof how);
        if (fd >= 0) return success(static_cast<int>(fd));
        int e = errno;
        if (e == ENOSYS || e == EPERM || e == E2BIG) openat2_missing = true;  // old kernel or seccomp
        // EXDEV: an absolute symlink or one leading out; the walk decides
        // (absolute targets inside the root are allowed). ELOOP: likewise.
        else if (e != EXDEV && e != ELOOP && e != EAGAIN) return failure(e);
    }
    return walk(root, root_fd, relative, flags);
}

OpenResult ConfinedRoots::walk(const Root& root, int root_fd, const std::string& relative, int flags) const {
    std::vector<UniqueFd> stack;  // the directories walked so far; [0] is the root
    stack.emplace_back(::openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!stack.back()) return failure(errno);
    std::deque<std::string> parts;
    push_components(parts, relative);
    int links = 0;
    while (!parts.empty()) {
        std::string name = std::move(parts.front());
        parts.pop_front();
        if (name == ".") continue;
        if (name == "..") {
            if (stack.size() == 1) return failure(EXDEV, kEscapes);
            stack.pop_back();
            continue;
        }
        const bool last = parts.empty();
        const int top = stack.back().get();
        int f = last ? (full_flags(flags) | O_NOFOLLOW) : (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        UniqueFd fd(::openat(top, name.c_str(), f));
        int e = errno;
        if (fd && in_own_mount(fd.get())) return failure(ELOOP, kIntoMount);
        std::string target;
        bool is_link = false;
        if (fd) {
            struct stat st {};
            // O_PATH|O_NOFOLLOW opens a symlink itself: follow it here.
            if ((f & O_PATH) && ::fstat(fd.get(), &st) == 0 && S_ISLNK(st.st_mode)) is_link = read_link(fd.get(), "", target);
            if (!is_link) {
                if (last) return success(fd.release());
                stack.push_back(std::move(fd));
                continue;
            }
        } else if (e == ELOOP || e == ENOTDIR) {
            is_link = read_link(top, name, target);
        }
        if (!is_link) return failure(e);
        if (++links > kMaxSymlinks) return failure(ELOOP);
        if (!target.empty() && target[0] == '/') {
            std::string normal = lexically_normal_absolute(target);
            const std::string* prefix = path_is_under(normal, root.lexical)     ? &root.lexical
                                        : path_is_under(normal, root.canonical) ? &root.canonical
                                                                                : nullptr;
            if (!prefix) return failure(EXDEV, kEscapes);
            stack.resize(1);
            target = normal.substr(prefix->size());
        }
        push_components(parts, target);
        if (parts.empty()) parts.push_back(".");
    }
    // The path named a directory walked to (the root itself, or ends in . or ..).
    UniqueFd fd(::openat(stack.back().get(), ".", full_flags(flags)));
    if (!fd) return failure(errno);
    return success(fd.release());
}

bool ConfinedRoots::stat(const std::string& path, struct stat& st) const {
    OpenResult r = open(path, O_PATH);
    if (!r.fd) {
        errno = r.error;
        return false;
    }
    return ::fstat(r.fd.get(), &st) == 0;
}

OpenResult open_for_reading(const std::string& path, const ConfinedRoots* within) {
    if (within) return within->open(path, O_RDONLY);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return failure(errno);
    return success(fd);
}

std::string refusal_of_non_regular(const struct stat& st) {
    if (S_ISREG(st.st_mode)) return {};
    const char* what = S_ISFIFO(st.st_mode)                           ? "a FIFO"
                       : S_ISDIR(st.st_mode)                          ? "a directory"
                       : S_ISSOCK(st.st_mode)                         ? "a socket"
                       : (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) ? "a device"
                                                                      : "of an unknown type";
    return std::string("not a regular file (") + what + "): refused";
}

OpenResult open_regular_file(const std::string& path, const ConfinedRoots* within) {
    OpenResult r = open_for_reading(path, within);
    if (!r.fd) return r;
    if (::fstat(r.fd.get(), &r.st) != 0) return failure(errno);
    if (std::string refusal = refusal_of_non_regular(r.st); !refusal.empty()) return failure(EINVAL, std::move(refusal));
    return r;
}

}  // namespace ncafs
