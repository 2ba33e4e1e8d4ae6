// Opening files by name without leaving a trusted directory tree while other
// users swap directories and symlinks inside it. Every path component is
// resolved from an fd of a root (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
// where the kernel has it; else an openat(O_NOFOLLOW) walk that follows
// symlinks itself). Symlinks are followed while they stay inside the root
// (relative, or absolute naming a path under it); one that leads out is
// refused. Callers then use only the fd: fstat for identity, pread, never the
// name again. Files are opened O_NONBLOCK (a FIFO cannot block a thread) and
// must be regular.
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>
#include <vector>

namespace ncafs {

// Closes on destruction.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept;
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd();
    int get() const { return fd_; }
    int release() {
        int f = fd_;
        fd_ = -1;
        return f;
    }
    explicit operator bool() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// The result of an open: an fd, or errno and a reason for messages.
struct OpenResult {
    UniqueFd fd;
    struct stat st {};   // fstat of fd (open_regular_file fills it: callers need no second fstat)
    int error = 0;       // errno when !fd
    std::string reason;  // e.g. "resolves (through symlinks) outside the allowed roots"
    // Refused by a rule of the walk (outside the roots, a link leading out,
    // into our own mount, not a regular file...), `reason` saying which;
    // false when `error` is the system's own answer (reason: its text).
    bool refused_by_rule = false;
};

class ConfinedRoots {
public:
    // Absolute directories (normalised lexically; their realpath is accepted
    // too for absolute symlink targets). The roots themselves are trusted
    // names (SOURCE, allow_root=): their O_PATH descriptors are held
    // process-wide (a few), each looked up by name again at most once a
    // second or when an open beneath it finds nothing.
    explicit ConfinedRoots(const std::vector<std::string>& roots);
    ~ConfinedRoots() = default;
    ConfinedRoots(const ConfinedRoots&) = delete;
    ConfinedRoots& operator=(const ConfinedRoots&) = delete;

    // Opens an absolute path that lies lexically under a root, walking from
    // that root's fd. flags: O_RDONLY, O_RDONLY|O_DIRECTORY or O_PATH;
    // O_CLOEXEC|O_NONBLOCK are added. ELOOP/EXDEV with a reason when a
    // symlink leads out; EACCES when the path is under no root.
    OpenResult open(const std::string& path, int flags) const;
    // The root (as given) that path lies under; "" when none.
    std::string root_of(const std::string& path) const;
    // fstat of what open(path, O_PATH) finds; false (errno set) when refused.
    bool stat(const std::string& path, struct stat& st) const;
    // openat2 is tried first unless disabled here (tests of the fallback
    // walk; it is also disabled for good when the kernel lacks it).
    static void set_openat2_enabled(bool enabled);

private:
    struct Root {
        std::string lexical, canonical;
    };
    OpenResult open_beneath(const Root& root, int root_fd, const std::string& relative, int flags) const;
    OpenResult walk(const Root& root, int root_fd, const std::string& relative, int flags) const;
    std::vector<Root> roots_;
};

// "a/./b/../c" -> "a/c"; relative paths are made absolute (current
// directory); never touches the disk.
std::string lexically_normal_absolute(const std::string& path);
// True when lexically_normal_absolute(path) == path: absolute, no empty,
// "." or ".." component, no trailing '/' (a check, no allocation).
bool is_lexically_normal_absolute(std::string_view path);
// True when path equals root or lies below it (component-wise).
bool path_is_under(const std::string& path, const std::string& root);

// The daemon's own mount (its MOUNTPOINT and the device the kernel gave it):
// from now on no confined open enters it. A file naming a view of the mount
// (MOUNTPOINT beneath SOURCE or an allow_root=, `../mnt/user/x.nc`) would
// otherwise have the daemon's threads wait on their own mount. Refused
// lexically (the path lies under MOUNTPOINT) and, for a path reaching it
// through symlinks, before the walk steps into the mount (its device
// compared with the kernel's cached attributes: no request to the mount).
// Call once, before the threads that open files start.
void refuse_own_mount(const std::string& mountpoint, dev_t device);

// A regular file opened for reading (O_RDONLY|O_NONBLOCK|O_CLOEXEC),
// confined to `within` when given, else by name (O_NOFOLLOW not applied:
// trusted command-line names). FIFOs, devices and sockets are refused
// (error EINVAL, reason "not a regular file (...)").
OpenResult open_regular_file(const std::string& path, const ConfinedRoots* within);
// open_regular_file without its fstat and type check (r.st unset): for
// OpenFile::open_with_head, which reads first and then makes the one fstat
// that both refuses what is not a regular file and gives the identity.
OpenResult open_for_reading(const std::string& path, const ConfinedRoots* within);
// "not a regular file (a FIFO): refused" (a directory, a socket, a device),
// or "" for a regular file.
std::string refusal_of_non_regular(const struct stat& st);

}  // namespace ncafs
