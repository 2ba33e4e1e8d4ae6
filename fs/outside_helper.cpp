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

namespace ncafs::fs {

namespace {

constexpr int kMaxGroups = 4096;  // a reply stays one small datagram

struct Request {
    char op;  // 'U' unmount, 'G' groups of tid
    int32_t tid;
};

struct GroupsReply {
    int32_t count;  // -1: unknown
    gid_t groups[kMaxGroups];
};

// /proc/self/mountinfo escapes blanks, newlines and backslashes as \ooo.
std::string unescape_mountinfo(const std::string& field) {
    std::string out;
    for (size_t i = 0; i < field.size(); ++i) {
        auto octal = [&](size_t k) { return k < field.size() && field[k] >= '0' && field[k] <= '7'; };
        if (field[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
            out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
            i += 3;
        } else {
            out += field[i];
        }
    }
    return out;
}

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

// The "Groups:" line of /proc/TID/task/TID/status (what fuse_req_getgroups reads).
int32_t read_groups(int32_t tid, gid_t* list) {
    if (tid <= 0) return -1;
    const std::string t = std::to_string(tid);
    std::ifstream in("/proc/" + t + "/task/" + t + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Groups:", 0) != 0) continue;
        std::istringstream numbers(line.substr(7));
        int32_t n = 0;
        unsigned long g;
        while (numbers >> g) {
            if (n < kMaxGroups) list[n] = static_cast<gid_t>(g);
            ++n;
        }
        return n;
    }
    return -1;
}

[[noreturn]] void serve(int sock, const std::string& mountpoint, const std::pair<std::string, std::string>& ours) {
    auto reply = std::make_unique<GroupsReply>();
    for (;;) {
        Request r {};
        ssize_t n = ::recv(sock, &r, sizeof r, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // the daemon has gone
        if (r.op == 'U') {
            unmount_if_ours(mountpoint, ours);
            ::send(sock, "D", 1, MSG_NOSIGNAL);
        } else if (r.op == 'G') {
            reply->count = read_groups(r.tid, reply->groups);
            const size_t shown = reply->count > 0 ? std::min<size_t>(reply->count, kMaxGroups) : 0;
            ::send(sock, reply.get(), sizeof(int32_t) + shown * sizeof(gid_t), MSG_NOSIGNAL);
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
}

OutsideHelper::~OutsideHelper() {
    if (active_helper.load() == this) active_helper.store(nullptr);
    ::close(socket_);  // the helper sees the end, unmounts if still mounted, exits
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

void OutsideHelper::unmount() {
    std::lock_guard lock(mutex_);
    const Request r{'U', 0};
    char done = 0;
    if (::send(socket_, &r, sizeof r, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof r))
        while (::recv(socket_, &done, 1, 0) < 0 && errno == EINTR) {
        }
}

int OutsideHelper::groups(pid_t tid, int size, gid_t list[]) {
    auto reply = std::make_unique<GroupsReply>();
    std::lock_guard lock(mutex_);
    const Request r{'G', static_cast<int32_t>(tid)};
    if (::send(socket_, &r, sizeof r, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof r)) return -1;
    ssize_t n;
    while ((n = ::recv(socket_, reply.get(), sizeof *reply, 0)) < 0 && errno == EINTR) {
    }
    if (n < static_cast<ssize_t>(sizeof(int32_t)) || reply->count < 0) return -1;
    const size_t got = (static_cast<size_t>(n) - sizeof(int32_t)) / sizeof(gid_t);
    const size_t copy = std::min({got, static_cast<size_t>(reply->count), static_cast<size_t>(std::max(size, 0))});
    std::copy(reply->groups, reply->groups + copy, list);
    return reply->count;
}

int caller_groups(fuse_req_t req, int size, gid_t list[]) {
    if (OutsideHelper* helper = active_helper.load()) return helper->groups(fuse_req_ctx(req)->pid, size, list);
    return fuse_req_getgroups(req, size, list);
}

void set_active_outside_helper(OutsideHelper* helper) { active_helper.store(helper); }

}  // namespace ncafs::fs
