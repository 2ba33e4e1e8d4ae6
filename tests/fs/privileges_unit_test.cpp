// Unit tests of fs/privileges, fs/syscall_filter and fs/process_groups. The
// filter and the capability drop cannot be undone, so each check runs in a
// forked child whose exit status carries the first failed step (0: all held).
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "fs/privileges.hpp"
#include "fs/process_groups.hpp"

using namespace ncafs::fs;

namespace {

// Runs body in a forked child; its return value is the exit status.
int in_child(const std::function<int()>& body) {
    const pid_t child = ::fork();
    if (child == 0) {
        int status = 99;
        try {
            status = body();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "child: %s\n", e.what());
        }
        ::_exit(status);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

bool fails_with(long result, int error) { return result == -1 && errno == error; }

std::string status_field(const std::string& key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
    return "";
}

uint64_t status_mask(const std::string& key) { return std::stoull(status_field(key), nullptr, 16); }

// A descriptor sent over a socket pair (SCM_RIGHTS) arrives.
bool descriptor_passes() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) != 0) return false;
    int fd = STDERR_FILENO;
    char byte = 'x';
    iovec io{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (::sendmsg(pair[0], &msg, 0) != 1) return false;
    std::memset(control, 0, sizeof control);
    if (::recvmsg(pair[1], &msg, 0) != 1) return false;
    c = CMSG_FIRSTHDR(&msg);
    return c && c->cmsg_type == SCM_RIGHTS;
}

// What a daemon forking helper processes needs: fork, kill, wait, threads, prctl, rlimits.
bool process_management_works() {
    const pid_t child = ::fork();
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    if (child < 0 || ::kill(child, SIGKILL) != 0) return false;
    int status = 0;
    if (::waitpid(child, &status, 0) != child || !WIFSIGNALED(status)) return false;
    bool ran = false;
    std::thread([&] { ran = true; }).join();
    rlimit core{0, 0};
    return ran && ::prctl(PR_SET_NAME, "probe", 0, 0, 0) == 0 && ::setrlimit(RLIMIT_CORE, &core) == 0 &&
           ::unshare(CLONE_FILES) == 0;
}

int refused_calls_fail() {
    if (!fails_with(::mount("none", "/", "tmpfs", 0, nullptr), EPERM)) return 1;
    if (!fails_with(::umount2("/nonexistent-ncafs", 0), EPERM)) return 2;
    if (!fails_with(::unshare(CLONE_NEWUSER), EPERM) || !fails_with(::unshare(CLONE_NEWNS), EPERM)) return 3;
    if (!fails_with(::syscall(SYS_clone3, nullptr, 0), ENOSYS)) return 4;
    if (!fails_with(::syscall(SYS_ptrace, 0 /* TRACEME */, 0, 0, 0), EPERM)) return 5;
    if (!fails_with(::syscall(SYS_bpf, 0, nullptr, 0), EPERM)) return 6;
    if (!fails_with(::syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM)) return 7;
    if (!fails_with(::syscall(SYS_setresuid, -1, -1, -1), EPERM)) return 8;
    if (!fails_with(::syscall(SYS_init_module, nullptr, 0, ""), EPERM)) return 9;
    if (!fails_with(::syscall(SYS_open_by_handle_at, -1, nullptr, 0), EPERM)) return 10;
    if (!fails_with(::syscall(SYS_io_uring_setup, 1, nullptr), EPERM)) return 11;
    if (!fails_with(::syscall(SYS_process_vm_readv, ::getpid(), nullptr, 0, nullptr, 0, 0), EPERM)) return 12;
    if (!fails_with(::syscall(SYS_setns, -1, 0), EPERM)) return 13;
    if (!fails_with(::syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0), EPERM)) return 14;
    // TIOCSTI with garbage in the upper half of the request word is still TIOCSTI to the kernel.
    if (!fails_with(::syscall(SYS_ioctl, 0, (0xdeadbeefUL << 32) | TIOCSTI, "x"), EPERM)) return 15;
    return 0;
}

}  // namespace

TEST(SyscallFilter, RefusesTheDangerousCallsWithEperm) {
    EXPECT_EQ(in_child([] {
                  drop_privileges(PrivilegeRole::Daemon);
                  if (status_field("Seccomp").find('2') == std::string::npos) return 20;
                  if (status_field("NoNewPrivs").find('1') == std::string::npos) return 21;
                  return refused_calls_fail();
              }),
              0);
}

TEST(SyscallFilter, LeavesProcessManagementAndDescriptorPassing) {
    EXPECT_EQ(in_child([] {
                  drop_privileges(PrivilegeRole::Daemon);
                  if (!process_management_works()) return 1;
                  if (!descriptor_passes()) return 2;
                  // Landlock stays usable (a helper may restrict itself further).
                  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u /* VERSION */);
                  if (abi < 0 && errno == EPERM) return 3;
                  return 0;
              }),
              0);
}

TEST(SyscallFilter, HelperMayUnmount) {
    EXPECT_EQ(in_child([] {
                  drop_privileges(PrivilegeRole::OutsideHelper);
                  if (::geteuid() != 0) return 0;  // a non-root helper keeps no filter (fusermount3 unmounts)
                  return ::umount2("/nonexistent-ncafs", 0) == -1 && errno != EPERM ? 0 : 1;
              }),
              0);
}

TEST(Privileges, RootKeepsOnlyTheListedCapabilities) {
    if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root";
    EXPECT_EQ(in_child([] {
                  drop_privileges(PrivilegeRole::Daemon);
                  uint64_t kept = 0;
                  for (int c : kept_capabilities(PrivilegeRole::Daemon)) kept |= uint64_t{1} << c;
                  if (status_mask("CapPrm") != kept || status_mask("CapBnd") != kept) return 1;
                  if (status_mask("CapEff") != kept || status_mask("CapInh") != 0 || status_mask("CapAmb") != 0)
                      return 2;
                  // Taking on a caller's fsuid drops the file capabilities; fsuid 0 brings them back.
                  ::setfsuid(65534);
                  if (status_mask("CapEff") & (uint64_t{1} << CAP_DAC_READ_SEARCH)) return 3;
                  ::setfsuid(0);
                  if (!(status_mask("CapEff") & (uint64_t{1} << CAP_DAC_READ_SEARCH))) return 4;
                  gid_t one = 12345;
                  if (::syscall(SYS_setgroups, 1, &one) != 0) return 5;  // the per-thread call stays allowed
                  return 0;
              }),
              0);
}

TEST(Privileges, CommandsKeepOnlyReading) {
    if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root";
    EXPECT_EQ(in_child([] {
                  drop_privileges(PrivilegeRole::Command);
                  const uint64_t kept = (uint64_t{1} << CAP_DAC_READ_SEARCH) | (uint64_t{1} << CAP_LEASE);
                  if (status_mask("CapPrm") != kept || status_mask("CapBnd") != kept) return 1;
                  return refused_calls_fail();
              }),
              0);
}

TEST(ProcessGroups, ReadsEveryGroupAndRefusesWhatIsNotWhole) {
    std::string groups;
    for (int g = 100000; g < 105001; ++g) groups += std::to_string(g) + ' ';
    const std::string ids = "Uid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t100\n";
    const std::string status = "Name:\tx\n" + ids + "FDSize:\t64\nGroups:\t" + groups + "\nNSpid:\t1\n";
    auto all = groups_from_status(status, 1000, 100);
    ASSERT_TRUE(all.has_value());
    ASSERT_EQ(all->size(), 5001u);
    EXPECT_EQ(all->back(), 105000u);
    EXPECT_FALSE(groups_from_status(status, 1001, 100).has_value()) << "another uid";
    EXPECT_FALSE(groups_from_status(status, 1000, 0).has_value()) << "another gid";
    EXPECT_FALSE(groups_from_status("Name:\tx\n" + ids + "Groups:\t1 2 3", 1000, 100).has_value()) << "cut";
    EXPECT_FALSE(groups_from_status("Name:\tx\n" + ids + "Groups:\t1 x 3\n", 1000, 100).has_value());
    EXPECT_FALSE(groups_from_status("Name:\tx\n" + ids, 1000, 100).has_value()) << "no Groups line";
    auto none = groups_from_status(ids + "Groups:\t\n", 1000, 100);
    ASSERT_TRUE(none.has_value());
    EXPECT_TRUE(none->empty());
}

TEST(ProcessGroups, OwnThreadMatchesGetgroups) {
    const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
    auto mine = groups_of_thread(tid, static_cast<uid_t>(::setfsuid(-1)), static_cast<gid_t>(::setfsgid(-1)));
    ASSERT_TRUE(mine.has_value());
    std::vector<gid_t> expected(static_cast<size_t>(::getgroups(0, nullptr)));
    ::getgroups(static_cast<int>(expected.size()), expected.data());
    std::sort(expected.begin(), expected.end());
    std::sort(mine->begin(), mine->end());
    EXPECT_EQ(*mine, expected);
    EXPECT_FALSE(groups_of_thread(tid, 4242424, 0).has_value());
}
