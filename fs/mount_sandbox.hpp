// The mount's side of the kernel sandbox: after the mount and fuse_daemonize,
// before any thread starts, fork the outside helper (fs/outside_helper.hpp)
// and restrict the daemon to SOURCE, allow_root=, cache_dir and the system
// files (fs/sandbox_policy.hpp), then drop its privileges (fs/privileges.hpp);
// at the end, unmount through the helper.
#pragma once

#include <memory>
#include <string>

#include "fs/options.hpp"
#include "fs/outside_helper.hpp"
#include "fs/sandbox_policy.hpp"

namespace ncafs::fs {

class MountSandbox {
public:
    // Restricts the calling (single-threaded) daemon when decision says Yes;
    // logs the decision's warning when it says No. A failure is logged and
    // leaves ok() false: the daemon must not serve.
    MountSandbox(const MountOptions& options, const SandboxDecision& decision);
    ~MountSandbox();
    bool ok() const { return ok_; }
    // For the "serving" log line: what the daemon may open ("" unconfined).
    const std::string& summary() const { return summary_; }
    // Before fuse_session_unmount: a restricted daemon's own umount2 is refused.
    void unmount();

private:
    std::unique_ptr<OutsideHelper> helper_;
    bool ok_ = true;
    std::string summary_;
};

}  // namespace ncafs::fs
