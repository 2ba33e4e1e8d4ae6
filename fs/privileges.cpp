#include "fs/privileges.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "fs/syscall_filter.hpp"

namespace ncafs::fs {

namespace {

[[noreturn]] void refuse_drop(const std::string& what) {
    throw std::runtime_error("cannot drop privileges: " + what + ": " + std::strerror(errno));
}

struct CapabilitySets {
    uint64_t effective = 0, permitted = 0, inheritable = 0;
};

CapabilitySets current_sets() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) != 0) refuse_drop("capget");
    auto join = [&](uint32_t __user_cap_data_struct::*field) {
        return static_cast<uint64_t>(data[0].*field) | (static_cast<uint64_t>(data[1].*field) << 32);
    };
    return {join(&__user_cap_data_struct::effective), join(&__user_cap_data_struct::permitted),
            join(&__user_cap_data_struct::inheritable)};
}

void set_sets(const CapabilitySets& s) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    for (int i = 0; i < 2; ++i) {
        data[i].effective = static_cast<uint32_t>(s.effective >> (32 * i));
        data[i].permitted = static_cast<uint32_t>(s.permitted >> (32 * i));
        data[i].inheritable = static_cast<uint32_t>(s.inheritable >> (32 * i));
    }
    if (::syscall(SYS_capset, &header, data) != 0) refuse_drop("capset");
}

uint64_t mask_of(const std::vector<int>& caps) {
    uint64_t mask = 0;
    for (int c : caps) mask |= uint64_t{1} << c;
    return mask;
}

// The bounding set limits what any later execve could gain; dropping from
// it takes CAP_SETPCAP, so it is emptied first, while that is still held.
void drop_bounding(uint64_t keep) {
    if (!(current_sets().effective & (uint64_t{1} << CAP_SETPCAP))) return;  // not root: nothing to gain there
    for (int cap = 0; cap < 64; ++cap) {
        const int held = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (held < 0) break;  // past the kernel's last capability
        if (held == 1 && !(keep & (uint64_t{1} << cap)) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
            refuse_drop("PR_CAPBSET_DROP " + std::to_string(cap));
    }
}

void drop_capabilities(uint64_t keep) {
    drop_bounding(keep);
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        refuse_drop("PR_CAP_AMBIENT_CLEAR_ALL");
    CapabilitySets s = current_sets();
    s.permitted &= keep;
    s.effective &= s.permitted;
    s.inheritable = 0;
    set_sets(s);
}

}  // namespace

std::vector<int> kept_capabilities(PrivilegeRole role) {
    if (role == PrivilegeRole::OutsideHelper) return {CAP_SYS_ADMIN};  // umount2 of the mount
    if (role == PrivilegeRole::Command) return {CAP_DAC_READ_SEARCH, CAP_LEASE};  // root reads any FILE it names
    // Reading other users' files for callers who may; setfsuid, setfsgid and
    // the per-thread setgroups to judge callers; read leases of files the
    // daemon does not own (io/writer_probe.hpp).
    return {CAP_DAC_READ_SEARCH, CAP_SETUID, CAP_SETGID, CAP_LEASE};
}

std::string capability_names(const std::vector<int>& caps) {
    std::string out;
    for (int c : caps) {
        const char* name = c == CAP_DAC_READ_SEARCH ? "dac_read_search"
                           : c == CAP_SETUID        ? "setuid"
                           : c == CAP_SETGID        ? "setgid"
                           : c == CAP_LEASE         ? "lease"
                           : c == CAP_SYS_ADMIN     ? "sys_admin"
                                                    : nullptr;
        out += (out.empty() ? "" : ", ") + (name ? std::string(name) : std::to_string(c));
    }
    return out;
}

std::string drop_privileges(PrivilegeRole role) {
    const std::vector<int> keep = kept_capabilities(role);
    drop_capabilities(mask_of(keep));
    const bool root = ::geteuid() == 0;
    if (role == PrivilegeRole::OutsideHelper && !root) return "";  // fusermount3 (setuid) unmounts for it
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) refuse_drop("PR_SET_NO_NEW_PRIVS");
    install_syscall_filter(role);
    return std::string(root ? "capabilities " + capability_names(keep) : "no capabilities") +
           ", no new privileges, system-call filter";
}

}  // namespace ncafs::fs
