#include "fs/outside_helper.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "fs/mountinfo.hpp"
#include "fs/privileges.hpp"
#include "fs/process_groups.hpp"

namespace ncafs::fs {

namespace {

constexpr size_t kGroupsPerMessage = 4096;  // one message of a reply stays small (16 KiB)
constexpr int32_t kMaxGroups = 65536;       // NGROUPS_MAX of the kernel

struct Request {
    char op;       // 'U' unmount, 'G' groups of tid
    int32_t tid;
    uint32_t uid;  // the request's filesystem uid and gid: the status file must show them
    uint32_t gid;
};

// The mount on top of mountpoint if it is a FUSE mount: its ID and device;
// empty when the top mount there is something else or there is none.
std::pair<std::string, std::string> top_fuse_mount(const std::string& mountpoint) {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    std::pair<std::string, std::string> top;
    bool top_is_fuse = false;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string id, parent, device, root, point, word;
        fields >> id >> parent >> device >> root >> point;
        if (unescape_mountinfo(point) != mountpoint) continue;
        while (fields >> word && word != "-") {
        }
        std::string type;
        fields >> type;
        top = {id, device};
        top_is_fuse = type == "fuse" || type.rfind("fuse.", 0) == 0;
    }
    return top_is_fuse ? top : std::pair<std::string, std::string>{};
}

// A lazily detached mount lives on while a process holds a file in it; ending
// its connection (fusectl, writable by the mount's owner) lets libfuse see
// it gone instead of trying an unmount of its own, which a sandboxed daemon
// may not do. Without fusectl the connection ends when the daemon exits.
void abort_connection(const std::string& device) {
    const auto colon = device.find(':');
    if (colon == std::string::npos || device.compare(0, colon, "0") != 0) return;
    std::ofstream abort_file("/sys/fs/fuse/connections/" + device.substr(colon + 1) + "/abort");
    abort_file << "1";
}

void unmount_if_ours(const std::string& mountpoint, const std::pair<std::string, std::string>& ours) {
    if (top_fuse_mount(mountpoint) != ours) return;  // gone (fusermount3 -u), or covered by another mount
    if (::geteuid() == 0) {
        if (::umount2(mountpoint.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
            std::fprintf(stderr, "ncafs: cannot unmount %s: %s\n", mountpoint.c_str(), std::strerror(errno));
        else
            abort_connection(ours.second);
        return;
    }
    pid_t child = ::fork();  // an unprivileged mount: fusermount3 (setuid) unmounts it
    if (child == 0) {
        ::execl("/usr/bin/fusermount3", "fusermount3", "-u", "-z", "--", mountpoint.c_str(), nullptr);
        ::execlp("fusermount3", "fusermount3", "-u", "-z", "--", mountpoint.c_str(), nullptr);
        ::_exit(127);
    }
    if (child > 0) ::waitpid(child, nullptr, 0);
    abort_connection(ours.second);
}

// A groups reply: the count (-1: unknown), then the groups in messages of
// kGroupsPerMessage.
void send_groups(int sock, const Request& r) {
    const auto groups = groups_of_thread(r.tid, r.uid, r.gid);
    const int32_t count = groups ? static_cast<int32_t>(groups->size()) : -1;
    if (::send(sock, &count, sizeof count, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof count) || !groups) return;
    for (size_t at = 0; at < groups->size(); at += kGroupsPerMessage) {
        const size_t n = std::min(kGroupsPerMessage, groups->size() - at);
        if (::send(sock, groups->data() + at, n * sizeof(gid_t), MSG_NOSIGNAL) < 0) return;
    }
}

[[noreturn]] void serve(int sock, const std::string& mountpoint, const std::pair<std::string, std::string>& ours) {
    for (;;) {
        Request r {};
        ssize_t n = ::recv(sock, &r, sizeof r, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // the daemon has gone
        if (r.op == 'U') {
            unmount_if_ours(mountpoint, ours);
            ::send(sock, "D", 1, MSG_NOSIGNAL);
        } else if (r.op == 'G') {
            send_groups(sock, r);
        }
    }
    unmount_if_ours(mountpoint, ours);
    ::_exit(0);
}

// In the forked child: only the socket (as fd 3) and standard streams stay open,
// and signals meant for the daemon (a systemd stop, ^C) do not end it early.
[[noreturn]] void become_helper(int sock, const std::string& mountpoint,
                                const std::pair<std::string, std::string>& ours) {
    ::prctl(PR_SET_NAME, "ncafs-outside", 0, 0, 0);
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, nullptr);
    if (sock != 3 && ::dup2(sock, 3) < 0) ::_exit(1);
    ::close_range(4, ~0U, 0);
    try {
        drop_privileges(PrivilegeRole::OutsideHelper);  // as root: CAP_SYS_ADMIN only, for umount2
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ncafs-outside: %s\n", e.what());
    }
    ::send(3, "R", 1, MSG_NOSIGNAL);  // confined: the daemon may go on
    serve(3, mountpoint, ours);
}

std::atomic<OutsideHelper*> active_helper{nullptr};

}  // namespace

OutsideHelper::OutsideHelper(const std::string& mountpoint) {
    const auto ours = top_fuse_mount(mountpoint);
    if (ours.first.empty()) throw std::runtime_error("the FUSE mount at " + mountpoint + " is not in /proc/self/mountinfo");
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    pid_ = ::fork();
    if (pid_ < 0) {
        ::close(pair[0]);
        ::close(pair[1]);
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (pid_ == 0) become_helper(pair[1], mountpoint, ours);
    ::close(pair[1]);
    socket_ = pair[0];
    wait_until_confined();
}

// The daemon serves nobody before the helper has dropped its privileges, so no
// one ever sees a helper with more than CAP_SYS_ADMIN.
void OutsideHelper::wait_until_confined() {
    char ready = 0;
    ssize_t n;
    while ((n = ::recv(socket_, &ready, 1, 0)) < 0 && errno == EINTR) {
    }
    if (n == 1 && ready == 'R') return;
    ::close(socket_);
    ::waitpid(pid_, nullptr, 0);
    throw std::runtime_error("the unmount helper ended before it was ready");
}

OutsideHelper::~OutsideHelper() {
    if (active_helper.load() == this) active_helper.store(nullptr);
    ::close(socket_);  // the helper sees the end, unmounts if still mounted, exits
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

void OutsideHelper::unmount() {
    MutexLock lock(mutex_);
    const Request r{'U', 0, 0, 0};
    char done = 0;
    if (::send(socket_, &r, sizeof r, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof r))
        while (::recv(socket_, &done, 1, 0) < 0 && errno == EINTR) {
        }
}

std::optional<std::vector<gid_t>> OutsideHelper::groups(pid_t tid, uid_t uid, gid_t gid) {
    MutexLock lock(mutex_);
    const Request r{'G', static_cast<int32_t>(tid), static_cast<uint32_t>(uid), static_cast<uint32_t>(gid)};
    if (::send(socket_, &r, sizeof r, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof r)) return std::nullopt;
    auto receive = [&](void* into, size_t size) {
        ssize_t n;
        while ((n = ::recv(socket_, into, size, 0)) < 0 && errno == EINTR) {
        }
        return n;
    };
    int32_t count = -1;
    if (receive(&count, sizeof count) != static_cast<ssize_t>(sizeof count) || count < 0 || count > kMaxGroups)
        return std::nullopt;
    std::vector<gid_t> groups(static_cast<size_t>(count));
    bool whole = true;
    for (size_t at = 0; at < groups.size(); at += kGroupsPerMessage) {  // every message read, even after a fault
        const size_t n = std::min(kGroupsPerMessage, groups.size() - at);
        whole = receive(groups.data() + at, n * sizeof(gid_t)) == static_cast<ssize_t>(n * sizeof(gid_t)) && whole;
    }
    if (!whole) return std::nullopt;
    return groups;
}

std::optional<std::vector<gid_t>> caller_groups(fuse_req_t req) {
    const fuse_ctx* ctx = fuse_req_ctx(req);
    if (OutsideHelper* helper = active_helper.load()) return helper->groups(ctx->pid, ctx->uid, ctx->gid);
    return groups_of_thread(ctx->pid, ctx->uid, ctx->gid);
}

void set_active_outside_helper(OutsideHelper* helper) { active_helper.store(helper); }

}  // namespace ncafs::fs
