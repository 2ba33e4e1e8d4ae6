#include "remote/cache_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/error.hpp"

namespace ncafs::remote {
namespace {

constexpr int kFileFlags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
constexpr int kFolderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string octal_mode(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "0%03o", static_cast<unsigned>(mode & 07777));
    return text;
}

[[noreturn]] void refuse(const std::string& dir, const std::string& reason) {
    throw UsageError("cache_dir " + dir + ": " + reason);
}

// Why opening `name` (relative to `at`) as a folder failed; the lstat only
// words the message (O_DIRECTORY|O_NOFOLLOW gives ENOTDIR for a link).
std::string open_failure(int at, const std::string& name, const std::string& what, int error) {
    struct stat st {};
    if (error == ELOOP || (error == ENOTDIR && ::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                           S_ISLNK(st.st_mode)))
        return what + " is a symbolic link (refused: only a real folder of this user is used)";
    if (error == ENOTDIR) return what + " is not a folder";
    return "cannot open " + what + ": " + std::strerror(error);
}

// The folder's fd after the checks on its fstat (never on its name).
UniqueFd checked_folder(UniqueFd fd, const std::string& dir, const std::string& what, bool root) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) refuse(dir, "cannot stat " + what + ": " + std::strerror(errno));
    if (st.st_uid != ::geteuid())
        refuse(dir, what + " is owned by uid " + std::to_string(st.st_uid) + ", not by this process's user (uid " +
                        std::to_string(::geteuid()) + "): another user could read or plant cached bytes");
    if (root && (st.st_mode & 022))
        refuse(dir, what + " is writable by its group or by others (mode " + octal_mode(st.st_mode) +
                        "): another user could plant files in the cache; use a folder only this user may write");
    if ((st.st_mode & 07777) != 0700 && ::fchmod(fd.get(), 0700) != 0)
        refuse(dir, "cannot make " + what + " mode 0700: " + std::strerror(errno));
    return fd;
}

UniqueFd open_root(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) refuse(dir, std::string("cannot create: ") + std::strerror(errno));
    UniqueFd fd(::open(dir.c_str(), kFolderFlags));
    if (!fd) refuse(dir, open_failure(AT_FDCWD, dir, "the folder", errno));
    return checked_folder(std::move(fd), dir, "the folder", true);
}

UniqueFd open_sub(int root, const std::string& dir, const std::string& name) {
    UniqueFd fd(::openat(root, name.c_str(), kFolderFlags));
    if (!fd && errno == ENOENT) {
        if (::mkdirat(root, name.c_str(), 0700) != 0 && errno != EEXIST)
            refuse(dir, "cannot create " + name + "/: " + std::strerror(errno));
        fd = UniqueFd(::openat(root, name.c_str(), kFolderFlags));
    }
    if (!fd) refuse(dir, open_failure(root, name, name, errno));
    return checked_folder(std::move(fd), dir, name + "/", false);
}

}  // namespace

CacheFolder::CacheFolder(std::string dir, const std::vector<std::string>& subs, CacheLog log)
    : dir_(std::move(dir)), log_(std::move(log)), root_(open_root(dir_)), sub_names_(subs) {
    for (const std::string& name : subs) {
        subs_.push_back(open_sub(root_.get(), dir_, name));
        if (name == "tmp") tmp_ = subs_.back().get();
    }
}

std::string CacheFolder::path_of(int folder, const std::string& name) const {
    for (size_t i = 0; i < subs_.size(); ++i)
        if (subs_[i].get() == folder) return dir_ + "/" + sub_names_[i] + "/" + name;
    return dir_ + "/" + name;
}

bool CacheFolder::is_ours(const struct stat& st) const {
    return S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && st.st_nlink == 1 && (st.st_mode & 077) == 0;
}

void CacheFolder::refuse_found(int folder, const std::string& name, const std::string& what) const {
    bool removed = ::unlinkat(folder, name.c_str(), 0) == 0;
    log_("remote: disk cache: " + path_of(folder, name) + ": " + what + ", not a file this cache wrote; " +
         (removed ? "removed" : "ignored"));
}

UniqueFd CacheFolder::open_file(int folder, const std::string& name, struct stat& st) const {
    UniqueFd fd(::openat(folder, name.c_str(), O_RDONLY | kFileFlags));
    if (!fd) {
        if (errno == ELOOP) refuse_found(folder, name, "a symbolic link");
        return fd;
    }
    if (::fstat(fd.get(), &st) != 0) return UniqueFd();
    if (!is_ours(st)) {
        refuse_found(folder, name,
                     S_ISREG(st.st_mode) ? "a file of mode " + octal_mode(st.st_mode) + ", owner uid " +
                                               std::to_string(st.st_uid) + ", " + std::to_string(st.st_nlink) + " links"
                                         : std::string("not a regular file"));
        return UniqueFd();
    }
    return fd;
}

UniqueFd CacheFolder::open_or_create(int folder, const std::string& name) const {
    for (int attempt = 0; attempt < 2; ++attempt) {
        UniqueFd fd(::openat(folder, name.c_str(), O_RDWR | O_CREAT | kFileFlags, 0600));
        struct stat st {};
        if (fd && ::fstat(fd.get(), &st) == 0 && is_ours(st)) return fd;
        if (fd || errno == ELOOP) refuse_found(folder, name, "not a regular file of mode 0600");
    }
    refuse(dir_, "cannot create " + path_of(folder, name) + ": " + std::strerror(errno));
}

TempFile CacheFolder::create_temp() const {
    static std::atomic<uint64_t> counter{0};
    uint64_t salt = 0;
    if (::getrandom(&salt, sizeof salt, 0) != sizeof salt) salt = 0;
    TempFile t;
    t.name = std::to_string(::getpid()) + "." + std::to_string(counter++) + "." + std::to_string(salt);
    t.fd = UniqueFd(::openat(tmp_, t.name.c_str(), O_RDWR | O_CREAT | O_EXCL | kFileFlags, 0600));
    if (!t.fd) throw SourceError(path_of(tmp_, t.name), std::string("cannot create: ") + std::strerror(errno));
    ::fchmod(t.fd.get(), 0600);  // whatever the umask left
    return t;
}

bool CacheFolder::publish(TempFile& temp, int folder, const std::string& name) const {
    if (::renameat(tmp_, temp.name.c_str(), folder, name.c_str()) == 0) return true;
    discard(temp);
    return false;
}

bool CacheFolder::publish_new(TempFile& temp, int folder, const std::string& name) const {
    if (::renameat2(tmp_, temp.name.c_str(), folder, name.c_str(), RENAME_NOREPLACE) == 0) return true;
    // A file system without RENAME_NOREPLACE: linkat fails on an existing name too.
    bool linked = errno == EINVAL && ::linkat(tmp_, temp.name.c_str(), folder, name.c_str(), 0) == 0;
    discard(temp);
    return linked;
}

void CacheFolder::discard(TempFile& temp) const {
    ::unlinkat(tmp_, temp.name.c_str(), 0);
    temp.fd = UniqueFd();
}

void CacheFolder::remove(int folder, const std::string& name) const { ::unlinkat(folder, name.c_str(), 0); }

std::vector<FolderEntry> CacheFolder::list(int folder) const {
    std::vector<FolderEntry> entries;
    int fd = ::openat(folder, ".", kFolderFlags);
    DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
    if (!d) {
        if (fd >= 0) ::close(fd);
        return entries;
    }
    while (const dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        FolderEntry entry{name, {}};
        if (::fstatat(folder, name.c_str(), &entry.st, AT_SYMLINK_NOFOLLOW) == 0) entries.push_back(std::move(entry));
    }
    ::closedir(d);
    return entries;
}

}  // namespace ncafs::remote
