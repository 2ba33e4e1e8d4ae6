#include "fs/mount_sandbox.hpp"

#include <exception>

#include "fs/landlock.hpp"
#include "fs/log.hpp"
#include "fs/privileges.hpp"

namespace ncafs::fs {

MountSandbox::MountSandbox(const MountOptions& options, const SandboxDecision& decision) {
    if (decision.kind != SandboxDecision::Yes) {
        log_line(LogLevel::Warning, decision.message);
        return;
    }
    try {
        helper_ = std::make_unique<OutsideHelper>(options.mountpoint);
        SandboxRoots roots;
        roots.read.push_back(options.source);
        for (const auto& r : options.view.extra_allowed_roots) roots.read.push_back(r);
        roots.remote = options.view.remote;
        enter_sandbox(roots);
        const std::string privileges = drop_privileges(PrivilegeRole::Daemon);
        set_active_outside_helper(helper_.get());
        std::string read;
        for (const auto& r : roots.read) read += (read.empty() ? "" : ", ") + r;
        summary_ = "; file access confined by Landlock (ABI " + std::to_string(landlock_abi()) + "): read beneath " +
                   read + (roots.remote.cache_dir.empty() ? "" : ", read-write beneath " + roots.remote.cache_dir) +
                   ", system files; " + privileges;
    } catch (const std::exception& e) {
        log_line(LogLevel::Error, std::string("cannot enter the sandbox: ") + e.what());
        ok_ = false;
    }
}

MountSandbox::~MountSandbox() { set_active_outside_helper(nullptr); }

void MountSandbox::unmount() {
    if (helper_) helper_->unmount();
}

}  // namespace ncafs::fs
