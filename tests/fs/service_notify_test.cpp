// notify_service against a real AF_UNIX datagram socket owned by the test:
// the receiving side is the kernel's, so the bytes and the sender's
// credentials are checked independently of the sending code.
#include "fs/service_notify.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace {

// A bound datagram socket with SO_PASSCRED, like systemd's notify socket.
class Listener {
public:
    // Path socket when ABSTRACT_NAME is empty, else an abstract one.
    explicit Listener(const std::string& abstract_name = {}) {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        EXPECT_GE(fd_, 0);
        int on = 1;
        EXPECT_EQ(::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on), 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        socklen_t length;
        if (abstract_name.empty()) {
            char dir_template[] = "/tmp/ncafs-notify-XXXXXX";
            EXPECT_NE(::mkdtemp(dir_template), nullptr);
            dir_ = dir_template;
            path_ = dir_ + "/notify";
            std::strcpy(a.sun_path, path_.c_str());
            length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path_.size() + 1);
            env_value_ = path_;
        } else {
            a.sun_path[0] = '\0';
            std::memcpy(a.sun_path + 1, abstract_name.data(), abstract_name.size());
            length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size());
            env_value_ = "@" + abstract_name;
        }
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), length), 0) << std::strerror(errno);
    }
    ~Listener() {
        if (fd_ >= 0) ::close(fd_);
        if (!path_.empty()) ::unlink(path_.c_str());
        if (!dir_.empty()) ::rmdir(dir_.c_str());
    }
    const std::string& env_value() const { return env_value_; }

    // Receives one datagram without blocking; sets SENDER_PID from SCM_CREDENTIALS.
    std::string receive(pid_t& sender_pid) {
        char data[4096];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
        iovec iov{data, sizeof data};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = control;
        m.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(fd_, &m, MSG_DONTWAIT);
        if (n < 0) return "<nothing received: " + std::string(std::strerror(errno)) + ">";
        sender_pid = -1;
        for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                ucred credentials;
                std::memcpy(&credentials, CMSG_DATA(c), sizeof credentials);
                sender_pid = credentials.pid;
            }
        }
        return std::string(data, static_cast<size_t>(n));
    }
    bool nothing_pending() {
        char byte;
        return ::recv(fd_, &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
    }

private:
    int fd_ = -1;
    std::string dir_, path_, env_value_;
};

class NotifyService : public ::testing::Test {
protected:
    void TearDown() override { ::unsetenv("NOTIFY_SOCKET"); }
};

TEST_F(NotifyService, WithoutNotifySocketDoesNothing) {
    ::unsetenv("NOTIFY_SOCKET");
    EXPECT_FALSE(ncafs::notify_service("READY=1"));
    ::setenv("NOTIFY_SOCKET", "", 1);
    EXPECT_FALSE(ncafs::notify_service("READY=1"));
}

TEST_F(NotifyService, SendsToPathSocketFromThisProcess) {
    Listener listener;
    ::setenv("NOTIFY_SOCKET", listener.env_value().c_str(), 1);
    ASSERT_TRUE(ncafs::notify_service("READY=1"));
    pid_t sender = 0;
    EXPECT_EQ(listener.receive(sender), "READY=1");
    EXPECT_EQ(sender, ::getpid());  // NotifyAccess=main accepts only the main PID
    ASSERT_TRUE(ncafs::notify_service("STOPPING=1"));
    EXPECT_EQ(listener.receive(sender), "STOPPING=1");
    EXPECT_TRUE(listener.nothing_pending());
}

TEST_F(NotifyService, SendsToAbstractSocket) {
    const std::string name = "ncafs-notify-test-" + std::to_string(::getpid());
    Listener listener(name);
    ASSERT_EQ(listener.env_value(), "@" + name);
    ::setenv("NOTIFY_SOCKET", listener.env_value().c_str(), 1);
    ASSERT_TRUE(ncafs::notify_service("READY=1\nSTATUS=serving /data"));
    pid_t sender = 0;
    EXPECT_EQ(listener.receive(sender), "READY=1\nSTATUS=serving /data");
    EXPECT_EQ(sender, ::getpid());
}

TEST_F(NotifyService, UnusableAddressesFailQuietly) {
    for (const char* bad : {"relative/notify", "@", "vsock:2:1234", "/nonexistent-dir-ncafs/notify"}) {
        ::setenv("NOTIFY_SOCKET", bad, 1);
        EXPECT_FALSE(ncafs::notify_service("READY=1")) << bad;
    }
    const std::string too_long = "/" + std::string(sizeof(sockaddr_un{}.sun_path), 'x');
    ::setenv("NOTIFY_SOCKET", too_long.c_str(), 1);
    EXPECT_FALSE(ncafs::notify_service("READY=1"));
    const std::string abstract_too_long = "@" + std::string(sizeof(sockaddr_un{}.sun_path), 'x');
    ::setenv("NOTIFY_SOCKET", abstract_too_long.c_str(), 1);
    EXPECT_FALSE(ncafs::notify_service("READY=1"));
}

TEST_F(NotifyService, EmptyStateIsNotSent) {
    Listener listener;
    ::setenv("NOTIFY_SOCKET", listener.env_value().c_str(), 1);
    EXPECT_FALSE(ncafs::notify_service(""));
    EXPECT_TRUE(listener.nothing_pending());
}

}  // namespace
