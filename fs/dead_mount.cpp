#include "fs/dead_mount.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fs/mountinfo.hpp"

namespace ncafs::fs {

namespace {

// Every access through a mount whose daemon died fails with ENOTCONN; an
// open always reaches the daemon (a stat may come from the kernel's cache).
bool is_dead(const std::string& mountpoint) {
    const int fd = ::open(mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::close(fd);
        return false;
    }
    return errno == ENOTCONN;
}

}  // namespace

std::optional<MountedThere> mount_at(const std::string& path) {
    std::ifstream mountinfo("/proc/self/mountinfo");
    std::optional<MountedThere> found;
    for (std::string line; std::getline(mountinfo, line);) {
        const auto separator = line.find(" - ");
        if (separator == std::string::npos) continue;
        std::istringstream left(line.substr(0, separator)), right(line.substr(separator + 3));
        std::string id, parent, device, root, point, fstype, source;
        if (!(left >> id >> parent >> device >> root >> point) || !(right >> fstype >> source)) continue;
        unsigned major = 0, minor = 0;
        if (std::sscanf(device.c_str(), "%u:%u", &major, &minor) != 2) continue;
        if (unescape_mountinfo(point) == path) found = MountedThere{fstype, unescape_mountinfo(source), makedev(major, minor)};
    }
    return found;  // the last one listed is the one on top
}

bool clear_dead_ncafs_mount(const std::string& mountpoint, const std::string& source) {
    // No canonical(): resolving a path through a dead mount fails.
    const std::string path = std::filesystem::absolute(mountpoint).lexically_normal().string();
    const std::string clean = path.size() > 1 && path.back() == '/' ? path.substr(0, path.size() - 1) : path;
    const auto mounted = mount_at(clean);
    if (!mounted || mounted->fstype != "fuse.ncafs" || mounted->source != source || !is_dead(clean)) return false;
    return ::umount2(clean.c_str(), MNT_DETACH) == 0;
}

}  // namespace ncafs::fs
