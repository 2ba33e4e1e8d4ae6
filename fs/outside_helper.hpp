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
#include <optional>
#include <string>
#include <vector>

#include <fuse_lowlevel.h>

#include "io/mutex.hpp"

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
    // Every supplementary group of thread tid, when its filesystem ids are
    // uid and gid (fs/process_groups.hpp); nullopt when unknown.
    std::optional<std::vector<gid_t>> groups(pid_t tid, uid_t uid, gid_t gid);

private:
    void wait_until_confined();
    struct MountId {
        std::string id, device;  // mount ID and major:minor from /proc/self/mountinfo
    };
    Mutex mutex_;  // one request at a time on the socket; lock order: a leaf
    int socket_ = -1;
    pid_t pid_ = -1;
};

// The request's caller's supplementary groups, all of them, through the
// active helper when there is one; nullopt when unknown (then refuse).
std::optional<std::vector<gid_t>> caller_groups(fuse_req_t req);
// The helper caller_groups asks (nullptr: none); set by the mount.
void set_active_outside_helper(OutsideHelper* helper);

}  // namespace ncafs::fs
