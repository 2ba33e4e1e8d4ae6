#include "io/private_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "io/error.hpp"

namespace ncafs {

namespace {

std::string random_suffix() {
    unsigned char bytes[6];
    if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
        for (auto& b : bytes) b = static_cast<unsigned char>(std::rand());
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string out;
    for (unsigned char b : bytes) out += digits[b % (sizeof digits - 1)];
    return out;
}

// Other users may add, remove or rename entries of the folder.
bool writable_by_others(const struct stat& folder) {
    return folder.st_uid != ::geteuid() || (folder.st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

// Makes a 0700 folder named after `name` in parent_fd and opens it without
// following a link; checks it is ours and private. Returns its descriptor.
int make_private(int parent_fd, const std::string& name, std::string& made, const std::string& target) {
    for (int attempt = 0; attempt < 16; ++attempt) {
        made = "." + name + "." + random_suffix();
        if (::mkdirat(parent_fd, made.c_str(), 0700) == 0) break;
        if (errno != EEXIST) throw SourceError(target, std::string("cannot make a private folder beside it: ") +
                                                           std::strerror(errno));
    }
    const int fd = ::openat(parent_fd, made.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        if (fd >= 0) ::close(fd);
        throw SourceError(target, "the private folder beside it was replaced by another user's");
    }
    return fd;
}

}  // namespace

PrivateFolder::PrivateFolder(const std::string& target) : target_(target) {
    const std::filesystem::path out(target);
    target_name_ = out.filename().string();
    if (target_name_.empty() || target_name_ == "." || target_name_ == "..")
        throw SourceError(target, "not a file name");
    const std::string parent = out.parent_path().empty() ? "." : out.parent_path().string();
    parent_fd_ = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent_fd_ < 0) throw SourceError(target, "cannot open its folder: " + std::string(std::strerror(errno)));
    try {
        check_target();
        folder_fd_ = make_private(parent_fd_, target_name_, folder_name_, target);
    } catch (...) {
        ::close(parent_fd_);
        throw;
    }
}

PrivateFolder::~PrivateFolder() {
    if (folder_fd_ >= 0) {
        if (DIR* d = ::fdopendir(::dup(folder_fd_))) {  // only our own files are in it (0700)
            while (dirent* e = ::readdir(d))
                if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                    ::unlinkat(folder_fd_, e->d_name, 0);
            ::closedir(d);
        }
        struct stat ours {}, there {};
        // The name may have been taken over since: remove only our folder.
        if (::fstat(folder_fd_, &ours) == 0 &&
            ::fstatat(parent_fd_, folder_name_.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
            ours.st_dev == there.st_dev && ours.st_ino == there.st_ino)
            ::unlinkat(parent_fd_, folder_name_.c_str(), AT_REMOVEDIR);
        ::close(folder_fd_);
    }
    ::close(parent_fd_);
}

void PrivateFolder::check_target() const {
    struct stat folder {}, st {};
    if (::fstat(parent_fd_, &folder) != 0) throw SourceError(target_, "cannot stat its folder");
    if (::fstatat(parent_fd_, target_name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // absent: made anew
    if (S_ISDIR(st.st_mode)) throw SourceError(target_, "is a folder");
    if (::geteuid() != 0 || !writable_by_others(folder)) return;
    if (S_ISLNK(st.st_mode))
        throw SourceError(target_, "refusing to replace a symbolic link in a folder other users may write "
                                   "(running as root); remove it or write elsewhere");
    if (st.st_uid != 0)
        throw SourceError(target_, "refusing to replace a file of uid " + std::to_string(st.st_uid) +
                                       " in a folder other users may write (running as root)");
}

std::string PrivateFolder::path() const { return "/proc/self/fd/" + std::to_string(folder_fd_); }

int PrivateFolder::create(const std::string& name, mode_t mode) const {
    const int fd = ::openat(folder_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) throw SourceError(target_, std::string("cannot create: ") + std::strerror(errno));
    return fd;
}

void PrivateFolder::write_file(const std::string& name, std::string_view bytes, mode_t mode) const {
    const int fd = create(name, mode);
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int error = n < 0 ? errno : EIO;
            ::close(fd);
            throw SourceError(target_, std::string("write failed: ") + std::strerror(error));
        }
        bytes.remove_prefix(static_cast<size_t>(n));
    }
    if (::close(fd) != 0) throw SourceError(target_, std::string("close failed: ") + std::strerror(errno));
}

void PrivateFolder::publish(const std::string& name) const {
    check_target();
    if (::renameat(folder_fd_, name.c_str(), parent_fd_, target_name_.c_str()) != 0)
        throw SourceError(target_, std::string("cannot rename the finished file into place: ") +
                                       std::strerror(errno));
}

int open_device_target(const std::string& target) {
    const int pinned = ::open(target.c_str(), O_PATH | O_CLOEXEC);  // follows links, opens nothing for I/O
    if (pinned < 0) return -1;
    struct stat st {};
    if (::fstat(pinned, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        ::close(pinned);
        return -1;
    }
    struct stat link {}, folder {};
    const std::filesystem::path out(target);
    const std::string parent = out.parent_path().empty() ? "." : out.parent_path().string();
    const bool linked = ::lstat(target.c_str(), &link) != 0 || S_ISLNK(link.st_mode);
    if (::geteuid() == 0 && (linked || st.st_uid != 0) &&
        (::stat(parent.c_str(), &folder) != 0 || writable_by_others(folder))) {
        ::close(pinned);
        throw SourceError(target, "refusing to write to a link, or a device or FIFO not root's, in a folder other "
                                  "users may write (running as root)");
    }
    const int fd = ::open(("/proc/self/fd/" + std::to_string(pinned)).c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    const int error = errno;
    ::close(pinned);
    if (fd < 0) throw SourceError(target, std::string("cannot open for writing: ") + std::strerror(error));
    return fd;
}

}  // namespace ncafs
