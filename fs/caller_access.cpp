#include "fs/caller_access.hpp"

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

namespace ncafs::fs {

namespace {

// glibc's setgroups() changes every thread of the process (setxid
// broadcast); the raw system call changes the calling thread only.
bool set_thread_groups(const std::vector<gid_t>& groups) {
    return ::syscall(SYS_setgroups, groups.size(), groups.empty() ? nullptr : groups.data()) == 0;
}

std::vector<gid_t> thread_groups() {
    int n = ::getgroups(0, nullptr);
    std::vector<gid_t> groups(n > 0 ? static_cast<size_t>(n) : 0);
    if (n > 0) {
        n = ::getgroups(n, groups.data());
        groups.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
    return groups;
}

// setfsuid/setfsgid report the previous value, not success: read back.
bool switch_fsuid(uid_t uid) {
    ::setfsuid(uid);
    return static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) == uid;
}

bool switch_fsgid(gid_t gid) {
    ::setfsgid(gid);
    return static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) == gid;
}

// faccessat2 with AT_EACCESS judges with the filesystem ids and the thread's
// groups. glibc's fallback when the kernel lacks it compares st_mode with
// geteuid(), which would be root's answer, so: the raw call, else an open.
int read_access_error(const std::string& path) {
#ifdef SYS_faccessat2
    if (::syscall(SYS_faccessat2, AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) == 0) return 0;
    if (errno != ENOSYS) return errno;
#endif
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return errno;
    ::close(fd);
    return 0;
}

// Search permission on a folder and every folder above it, for the current credentials.
int search_access_error(const std::string& folder) {
#ifdef SYS_faccessat2
    if (::syscall(SYS_faccessat2, AT_FDCWD, folder.c_str(), X_OK, AT_EACCESS) == 0) return 0;
    if (errno != ENOSYS) return errno;
#endif
    UniqueFd fd(::open(folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));  // walks as the caller
    if (!fd) return errno;
    return ::faccessat(fd.get(), ".", X_OK, AT_EACCESS) == 0 ? 0 : errno;
}

// The read access of an opened file (O_PATH) for the current credentials.
int fd_read_access_error(int fd, const ConfinedRoots& within, const std::string& path) {
#ifdef SYS_faccessat2
    if (::syscall(SYS_faccessat2, fd, "", R_OK, AT_EACCESS | AT_EMPTY_PATH) == 0) return 0;
    if (errno != ENOSYS && errno != EINVAL) return errno;
#endif
    OpenResult r = within.open(path, O_RDONLY);  // kernels before 5.8: an open as the caller
    return r.fd ? 0 : r.error;
}

// One file as the caller, walked from its root's descriptor: 0 and what is
// there (its pin, or absent), or the errno of a refusal. A file the walk
// refuses for everyone (leading out of the roots) counts as absent: the
// daemon cannot read it either.
int caller_may_read(const ConfinedRoots& within, const std::string& file, FilePin& pin) {
    pin = FilePin{};
    OpenResult r = within.open(file, O_PATH);
    if (!r.fd) {
        const bool permission = (r.error == EACCES || r.error == EPERM) && !r.refused_by_rule;
        if (permission) return r.error;
        pin.absent = true;
        return 0;
    }
    if (int e = fd_read_access_error(r.fd.get(), within, file)) return e;
    auto found = FilePins::pin_of(r.fd.get());
    if (!found) return errno ? errno : EIO;
    pin = *found;
    return 0;
}

void add_folders_on_the_way(const std::string& path, std::set<std::string>& folders) {
    for (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0; slash = path.rfind('/', slash - 1)) {
        if (!folders.insert(path.substr(0, slash)).second) return;  // its ancestors are in already
    }
    if (!path.empty() && path[0] == '/') folders.insert("/");
}

std::string fingerprint_of(const std::vector<std::string>& folders) {
    std::string out;
    for (const auto& folder : folders) {
        struct stat st {};
        if (::stat(folder.c_str(), &st) != 0) {
            out += "-;";
            continue;
        }
        out += std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' + std::to_string(st.st_mode) +
               ':' + std::to_string(st.st_uid) + ':' + std::to_string(st.st_gid) + ':' +
               std::to_string(st.st_ctim.tv_sec) + '.' + std::to_string(st.st_ctim.tv_nsec) + ';';
    }
    return out;
}

std::string subject_key(const Caller& caller, const std::string& subject, const struct stat& st) {
    return caller.key() + '\0' + subject + '\0' + std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' +
           std::to_string(st.st_mode) + ':' + std::to_string(st.st_uid) + ':' + std::to_string(st.st_gid) + ':' +
           std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) + '.' +
           std::to_string(st.st_mtim.tv_nsec) + ':' + std::to_string(st.st_ctim.tv_sec) + '.' +
           std::to_string(st.st_ctim.tv_nsec);
}

}  // namespace

std::string Caller::key() const {
    std::string k = std::to_string(uid) + ':' + std::to_string(gid);
    for (gid_t g : groups) k += ',' + std::to_string(g);
    return k;
}

std::string Caller::describe() const { return "uid " + std::to_string(uid) + " gid " + std::to_string(gid); }

AssumedCredentials::AssumedCredentials(const Caller& caller) {
    saved_fsuid_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1)));
    saved_fsgid_ = static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1)));
    saved_groups_ = thread_groups();
    // Groups and gid first: dropping the fsuid from 0 also drops the
    // capabilities that would let us change them.
    if (caller.groups != saved_groups_) {
        if (!set_thread_groups(caller.groups)) return;
        groups_changed_ = true;
    }
    if (!switch_fsgid(caller.gid) || !switch_fsuid(caller.uid)) {
        restore();
        return;
    }
    ok_ = true;
}

AssumedCredentials::~AssumedCredentials() { restore(); }

void AssumedCredentials::restore() {
    ::setfsuid(saved_fsuid_);  // first: gives back the capabilities to restore the rest
    ::setfsgid(saved_fsgid_);
    if (groups_changed_) set_thread_groups(saved_groups_);
    groups_changed_ = false;
}

AccessVerdict readable_by_current_credentials(const std::vector<std::string>& files, const ConfinedRoots* within,
                                              std::vector<FilePin>* pins) {
    if (!within) {
        for (const auto& file : files) {
            int error = read_access_error(file);
            if (error == 0 || error == ENOENT) continue;
            return AccessVerdict{false, file, error};
        }
        return {};
    }
    std::set<std::string> roots_searched;
    bool through_links = false;
    if (pins) pins->resize(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
        // The folders above a root: searched by name (the operator's trusted
        // path), once per root; the rest walked from the root's descriptor.
        const std::string root = within->root_of(files[i]);
        if (!root.empty() && roots_searched.insert(root).second)
            if (int error = search_access_error(root)) return AccessVerdict{false, root, error};
        FilePin pin;
        if (int error = caller_may_read(*within, files[i], pin)) return AccessVerdict{false, files[i], error};
        if (pins) (*pins)[i] = pin;
        struct stat named {};
        through_links |= ::lstat(files[i].c_str(), &named) == 0 && S_ISLNK(named.st_mode);
    }
    AccessVerdict verdict;
    verdict.through_links = through_links;
    return verdict;
}

CallerAccess::CallerAccess(std::shared_ptr<const ConfinedRoots> within) : within_(std::move(within)) {
    if (within_) FilePins::shared().enforce(true);
}

uint64_t CallerAccess::pins_generation() const { return within_ ? FilePins::shared().generation() : 0; }

AccessVerdict CallerAccess::run_check(const Caller& caller, const std::vector<std::string>& files) {
    {
        MutexLock lock(mutex_);
        ++checks_run_;
    }
    std::vector<FilePin> pins;
    AccessVerdict verdict;
    {
        AssumedCredentials as_caller(caller);
        if (!as_caller.ok()) {
            // A daemon that cannot take on other users' rights reads with its own.
            if (caller.uid != ::geteuid())
                return AccessVerdict{false, files.empty() ? std::string() : files.front(), EPERM};
        }
        verdict = readable_by_current_credentials(files, within_.get(), &pins);
    }
    // What the caller found is what reads may open from now on (io/file_pins.hpp).
    if (verdict.allowed && within_)
        for (size_t i = 0; i < files.size() && i < pins.size(); ++i)
            verdict.pins_moved += FilePins::shared().pin(files[i], pins[i]) ? 1 : 0;
    return verdict;
}

AccessVerdict CallerAccess::check(const Caller& caller, const std::string& subject, const struct stat& subject_st,
                                  const std::shared_ptr<const std::vector<std::string>>& files, bool cacheable) {
    std::string key = subject_key(caller, subject, subject_st);
    uint64_t generation;
    std::optional<Decision> cached;
    {
        MutexLock lock(mutex_);
        generation = generation_;
        auto it = cacheable ? decisions_.find(key) : decisions_.end();
        if (it != decisions_.end() && (it->second.files == files || *it->second.files == *files)) cached = it->second;
    }
    // The folders are stat'ed outside the lock (other opens go on). A pin
    // changed since: the files are opened as the caller again.
    if (cached && cached->pins_generation == pins_generation() && fingerprint_of(cached->folders) == cached->fingerprint)
        return AccessVerdict{cached->verdict.allowed, cached->verdict.file, cached->verdict.error, 0, false};
    std::set<std::string> on_the_way;
    add_folders_on_the_way(subject, on_the_way);
    for (const auto& f : *files) add_folders_on_the_way(f, on_the_way);
    Decision d;
    d.files = files;
    d.folders.assign(on_the_way.begin(), on_the_way.end());
    d.fingerprint = fingerprint_of(d.folders);  // before the check: a change during it shows later
    d.pins_generation = pins_generation();
    d.verdict = run_check(caller, *files);
    // A refusal is not kept: a link on the way, in a folder no fingerprint
    // covers, may name a file the caller may read at the next open.
    if (!cacheable || !d.verdict.allowed || d.verdict.through_links) return d.verdict;
    MutexLock lock(mutex_);
    if (generation != generation_) return d.verdict;  // attributes changed meanwhile: do not keep it
    if (decisions_.size() >= kMaxDecisions) decisions_.clear();
    decisions_[key] = d;
    return d.verdict;
}

void CallerAccess::forget_all() {
    MutexLock lock(mutex_);
    ++generation_;
    decisions_.clear();
}

uint64_t CallerAccess::generation() const {
    MutexLock lock(mutex_);
    return generation_ + pins_generation();
}

size_t CallerAccess::checks_run() const {
    MutexLock lock(mutex_);
    return checks_run_;
}

}  // namespace ncafs::fs
