// A small process the mount forks just before it restricts itself, left
// outside the Landlock domain for the two things a restricted daemon may not
// do: unmount (umount2 is refused inside a domain) and read a caller's
// supplementary groups (/proc/PID/task/TID/status; /proc as a whole stays
// closed to the daemon). It serves the daemon over a socket pair and nothing
// else, and unmounts only the FUSE mount it was started for, while that mount
// is still the one on top of the mount point. When the daemon goes away
// without asking (killed, crashed), it unmounts that mount too and exits.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>

#include <fuse_lowlevel.h>

namespace ncafs::fs {

class OutsideHelper {
public:
    // Forks the helper for the FUSE mount now at mountpoint (absolute).
    // Throws std::runtime_error when the mount is not found or fork fails.
    explicit OutsideHelper(const std::string& mountpoint);
    // Ends the helper (after unmounting, if unmount() was not called) and waits for it.
    ~OutsideHelper();
    OutsideHelper(const OutsideHelper&) = delete;
    OutsideHelper& operator=(const OutsideHelper&) = delete;

    // Unmounts the mount (lazily) unless it is gone or covered; waits for the answer.
    void unmount();
    // As fuse_req_getgroups: the number of groups of thread tid (up to size
    // written to list), or -1 when unknown.
    int groups(pid_t tid, int size, gid_t list[]);

private:
    struct MountId {
        std::string id, device;  // mount ID and major:minor from /proc/self/mountinfo
    };
    std::mutex mutex_;  // one request at a time on the socket; lock order: a leaf
    int socket_ = -1;
    pid_t pid_ = -1;
};

// fuse_req_getgroups, asked through the active helper when there is one.
int caller_groups(fuse_req_t req, int size, gid_t list[]);
// The helper caller_groups asks (nullptr: none); set by the mount.
void set_active_outside_helper(OutsideHelper* helper);

}  // namespace ncafs::fs
