#include "fs/caller_access.hpp"

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

AccessVerdict readable_by_current_credentials(const std::vector<std::string>& files) {
    for (const auto& file : files) {
        int error = read_access_error(file);
        if (error == 0 || error == ENOENT) continue;
        return AccessVerdict{false, file, error};
    }
    return {};
}

AccessVerdict CallerAccess::run_check(const Caller& caller, const std::vector<std::string>& files) {
    {
        std::lock_guard lock(mutex_);
        ++checks_run_;
    }
    AssumedCredentials as_caller(caller);
    if (!as_caller.ok()) {
        // A daemon that cannot take on other users' rights reads with its own.
        if (caller.uid == ::geteuid()) return {};
        return AccessVerdict{false, files.empty() ? std::string() : files.front(), EPERM};
    }
    return readable_by_current_credentials(files);
}

AccessVerdict CallerAccess::check(const Caller& caller, const std::string& subject, const struct stat& subject_st,
                                  const std::shared_ptr<const std::vector<std::string>>& files, bool cacheable) {
    std::string key = subject_key(caller, subject, subject_st);
    uint64_t generation;
    std::optional<Decision> cached;
    {
        std::lock_guard lock(mutex_);
        generation = generation_;
        auto it = cacheable ? decisions_.find(key) : decisions_.end();
        if (it != decisions_.end() && (it->second.files == files || *it->second.files == *files)) cached = it->second;
    }
    // The folders are stat'ed outside the lock (other opens go on).
    if (cached && fingerprint_of(cached->folders) == cached->fingerprint) return cached->verdict;
    std::set<std::string> on_the_way;
    add_folders_on_the_way(subject, on_the_way);
    for (const auto& f : *files) add_folders_on_the_way(f, on_the_way);
    Decision d;
    d.files = files;
    d.folders.assign(on_the_way.begin(), on_the_way.end());
    d.fingerprint = fingerprint_of(d.folders);  // before the check: a change during it shows later
    d.verdict = run_check(caller, *files);
    if (!cacheable) return d.verdict;
    std::lock_guard lock(mutex_);
    if (generation != generation_) return d.verdict;  // attributes changed meanwhile: do not keep it
    if (decisions_.size() >= kMaxDecisions) decisions_.clear();
    decisions_[key] = d;
    return d.verdict;
}

void CallerAccess::forget_all() {
    std::lock_guard lock(mutex_);
    ++generation_;
    decisions_.clear();
}

uint64_t CallerAccess::generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
}

size_t CallerAccess::checks_run() const {
    std::lock_guard lock(mutex_);
    return checks_run_;
}

}  // namespace ncafs::fs
