// What is mounted at a MOUNTPOINT, and the dead mount a killed daemon leaves
// behind (every access answers ENOTCONN until it is unmounted).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace ncafs::fs {

struct MountedThere {
    std::string fstype;  // as /proc/self/mountinfo says: fuse.ncafs, tmpfs, ...
    std::string source;
    dev_t device = 0;  // the major:minor the kernel gave the mount
};

// The mount on top at PATH (absolute, no symlinks), if PATH is a mount point.
std::optional<MountedThere> mount_at(const std::string& path);

// Detaches the mount at MOUNTPOINT when it is a fuse.ncafs mount of SOURCE
// whose daemon is gone; leaves every other mount alone (a live one, another
// instance's, another file system). Returns true when it cleared one. Needs
// CAP_SYS_ADMIN; without it the dead mount stays.
bool clear_dead_ncafs_mount(const std::string& mountpoint, const std::string& source);

}  // namespace ncafs::fs
