// The life of a mount: FUSE session, mount, daemonize (only after the mount
// succeeded, so that errors reach the caller and mount(8)), request loop,
// clean unmount on fusermount3 -u, umount, SIGTERM or SIGINT.
#pragma once

#include "fs/options.hpp"

namespace ncafs::fs {

// Returns the process exit status.
int run_mount(const MountOptions& options, const char* program);

}  // namespace ncafs::fs
