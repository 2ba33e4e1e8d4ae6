#include "fs/syscall_filter.hpp"

#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace ncafs::fs {

namespace {

// Refused in every role. Grouped by what an attacker would do with them.
constexpr const char* kRefused[] = {
    // mounts and the root folder (the daemon's unmount goes through its helper)
    "mount", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr",
    // kernel code and state
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "bpf", "perf_event_open",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm", "lookup_dcookie", "uselib",
    "vhangup", "nfsservctl", "_sysctl", "create_module", "get_kernel_syms", "query_module", "personality",
    // other processes' memory, descriptors and state
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
    // namespaces (clone and unshare: only their namespace flags, below)
    "setns",
    // kernel keyrings
    "keyctl", "add_key", "request_key",
    // files by handle (around every path check), device nodes, io_uring (around this filter)
    "open_by_handle_at", "name_to_handle_at", "mknod", "mknodat", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "fanotify_init", "userfaultfd",
    // becoming another user for good (callers are taken on per thread with setfsuid/setfsgid)
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
};

constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
                                             CLONE_NEWUTS, CLONE_NEWIPC,  CLONE_NEWCGROUP, 0x00000080 /* NEWTIME */};

class Filter {
public:
    Filter() : ctx_(seccomp_init(SCMP_ACT_ALLOW)) {
        if (!ctx_) throw std::runtime_error("seccomp_init failed");
    }
    ~Filter() { seccomp_release(ctx_); }
    Filter(const Filter&) = delete;
    Filter& operator=(const Filter&) = delete;

    void check(int rc, const std::string& what) {
        if (rc < 0) throw std::runtime_error("system-call filter: " + what + ": " + std::strerror(-rc));
    }
    // A call this architecture does not have is skipped.
    void refuse(const char* name, int error = EPERM) {
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) return;
        check(seccomp_rule_add(ctx_, SCMP_ACT_ERRNO(error), nr, 0), name);
    }
    // Refused when argument arg compares (op) with a; MASKED_EQ: (arg & a) == b.
    void refuse_when(int nr, unsigned arg, scmp_compare op, uint64_t a, uint64_t b, const char* name) {
        scmp_arg_cmp compare{};
        compare.arg = arg;
        compare.op = op;
        compare.datum_a = a;
        compare.datum_b = b;
        check(seccomp_rule_add_array(ctx_, SCMP_ACT_ERRNO(EPERM), nr, 1, &compare), name);
    }
    scmp_filter_ctx get() { return ctx_; }

private:
    scmp_filter_ctx ctx_;
};

void refuse_namespaces(Filter& f) {
    f.refuse("clone3", ENOSYS);  // the C library falls back to clone
    for (unsigned long flag : kNamespaceFlags) {
        f.refuse_when(SCMP_SYS(clone), 0, SCMP_CMP_MASKED_EQ, flag, flag, "clone");
        f.refuse_when(SCMP_SYS(unshare), 0, SCMP_CMP_MASKED_EQ, flag, flag, "unshare");
    }
}

}  // namespace

std::vector<std::string> refused_system_calls(PrivilegeRole role) {
    std::vector<std::string> names;
    for (const char* name : kRefused)
        if (seccomp_syscall_resolve_name(name) != __NR_SCMP_ERROR) names.emplace_back(name);
    if (role != PrivilegeRole::OutsideHelper) names.emplace_back("umount2");  // the helper unmounts
    return names;
}

void install_syscall_filter(PrivilegeRole role) {
    Filter f;
    // Calls of another architecture (the 32-bit ABI of x86-64) are refused as well.
    f.check(seccomp_attr_set(f.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM)), "bad architecture action");
    for (const auto& name : refused_system_calls(role)) f.refuse(name.c_str());
    refuse_namespaces(f);
    // Typing into the controlling terminal of whoever started us. The kernel
    // reads the request as 32 bits: the upper ones must not slip past.
    f.refuse_when(SCMP_SYS(ioctl), 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI, "ioctl TIOCSTI");
    f.refuse_when(SCMP_SYS(ioctl), 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX, "ioctl TIOCLINUX");
    f.check(seccomp_load(f.get()), "load");
}

}  // namespace ncafs::fs
