#include "codecs/netcdf/helper_confinement.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NCAFS_HELPER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define NCAFS_HELPER_ASAN 1
#endif

namespace ncafs::netcdf {

namespace {

#ifdef NCAFS_HELPER_ASAN
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif

// The ruleset attribute of Landlock ABI 6 (the build machine's header may be older).
struct RulesetAttr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
constexpr uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;

uint64_t handled_fs_rights(long abi) {
    uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
    if (abi >= 2) rights |= 1ULL << 13;  // REFER
    if (abi >= 3) rights |= 1ULL << 14;  // TRUNCATE
    if (abi >= 5) rights |= 1ULL << 15;  // IOCTL_DEV
    return rights;
}

std::string landlock_one_file(int file_fd) {
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi <= 0) return "no Landlock: the helper's file access is not restricted";
    RulesetAttr attr{handled_fs_rights(abi), abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0,
                     abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0};
    const size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? offsetof(RulesetAttr, scoped) : sizeof(uint64_t);
    const int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
    if (ruleset < 0) return std::string("Landlock ruleset: ") + std::strerror(errno);
    landlock_path_beneath_attr rule{};
    rule.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE;
    rule.parent_fd = file_fd;
    std::string problem;
    if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
        problem = std::string("Landlock rule: ") + std::strerror(errno);  // then not even that file
    if (::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) problem = std::string("Landlock: ") + std::strerror(errno);
    ::close(ruleset);
    return problem;
}

// Every capability but CAP_DAC_READ_SEARCH (HDF5 opens the one file again
// by its /proc/self/fd name, whoever owns it), and none to regain.
void drop_capabilities() {
    for (int cap = 0; cap <= 63; ++cap)  // EINVAL past the kernel's last capability
        if (cap != CAP_DAC_READ_SEARCH && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    data[0].effective = data[0].permitted = 1u << CAP_DAC_READ_SEARCH;
    ::syscall(SYS_capset, &header, data);  // fails harmlessly for a process without capabilities
}

void set_limit(int resource, rlim_t value) {
    rlimit r{value, value};
    ::setrlimit(resource, &r);
}

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#endif

// The system calls a helper never needs: whatever reaches another process,
// the network, a program or the kernel's rarer surfaces; EPERM for each.
// The zygote keeps fork and kill (of its own helpers).
std::vector<long> refused_calls(bool zygote) {
    std::vector<long> calls;
    if (!zygote)
        calls = {
#ifdef SYS_fork
            SYS_fork, SYS_vfork,
#endif
            SYS_kill, SYS_tkill, SYS_tgkill};
    const std::vector<long> always = {
        SYS_clone3, SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,
        SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, SYS_pidfd_open,
        SYS_pidfd_send_signal, SYS_pidfd_getfd, SYS_socket, SYS_connect, SYS_bind, SYS_unshare, SYS_setns,
        SYS_mount, SYS_umount2, SYS_chroot, SYS_pivot_root, SYS_open_by_handle_at, SYS_name_to_handle_at,
        SYS_keyctl, SYS_add_key, SYS_request_key, SYS_bpf, SYS_perf_event_open, SYS_userfaultfd,
        SYS_io_uring_setup, SYS_setuid, SYS_setgid, SYS_setresuid, SYS_setresgid};
    calls.insert(calls.end(), always.begin(), always.end());
    return calls;
}

std::string install_seccomp(bool zygote) {
#if defined(__x86_64__) || defined(__aarch64__)
    std::vector<sock_filter> f;
    f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    // clone: threads only (CLONE_THREAD in its flags), never a process
    // (the zygote's forks are clones without it: then the jump skips this).
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, zygote ? ~0u : SYS_clone, 0, 4));
    f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    for (long nr : refused_calls(zygote)) {
        f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
        f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    }
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return std::string("seccomp: ") + std::strerror(errno);
    return "";
#else
    return "no seccomp filter for this architecture";
#endif
}

}  // namespace

std::string confine_helper(int file_fd, const HelperLimits& limits) {
    set_limit(RLIMIT_CORE, 0);
    set_limit(RLIMIT_FSIZE, 0);
    set_limit(RLIMIT_CPU, limits.cpu_seconds);
    if (!kUnderAddressSanitizer) set_limit(RLIMIT_AS, limits.memory_bytes);
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    drop_capabilities();
    std::string problems = landlock_one_file(file_fd);
    const std::string seccomp = install_seccomp(false);
    if (!seccomp.empty()) problems += (problems.empty() ? "" : "; ") + seccomp;
    return problems;
}

std::string confine_zygote() {
    set_limit(RLIMIT_CORE, 0);
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    drop_capabilities();
    return install_seccomp(true);
}

}  // namespace ncafs::netcdf
