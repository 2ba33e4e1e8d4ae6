#include "fs/service_notify.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace ncafs {

namespace {

// Fills ADDRESS from the value of NOTIFY_SOCKET; returns the address length
// to pass to sendmsg, or 0 when the value is not a usable address.
socklen_t notify_address(const char* value, sockaddr_un& address) {
    std::memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    const size_t length = std::strlen(value);
    if (value[0] == '/') {
        // A path needs room for its terminating NUL.
        if (length >= sizeof address.sun_path) return 0;
        std::memcpy(address.sun_path, value, length);
        return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length + 1);
    }
    if (value[0] == '@') {
        // Abstract namespace: a leading NUL, then the name; the length counts
        // exactly the name bytes (no terminator), as systemd binds it.
        if (length < 2 || length > sizeof address.sun_path) return 0;
        address.sun_path[0] = '\0';
        std::memcpy(address.sun_path + 1, value + 1, length - 1);
        return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
    }
    // Relative paths and other address families (vsock: in newer systemd)
    // are not something systemd 252 hands out; refuse rather than guess.
    return 0;
}

}  // namespace

bool notify_service(std::string_view state) {
    if (state.empty()) return false;
    const char* value = std::getenv("NOTIFY_SOCKET");
    if (value == nullptr || value[0] == '\0') return false;

    sockaddr_un address;
    const socklen_t address_length = notify_address(value, address);
    if (address_length == 0) return false;

    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;

    iovec payload{};
    payload.iov_base = const_cast<char*>(state.data());
    payload.iov_len = state.size();
    msghdr message{};
    message.msg_name = &address;
    message.msg_namelen = address_length;
    message.msg_iov = &payload;
    message.msg_iovlen = 1;
    // The receiver (systemd) identifies the sender by SCM_CREDENTIALS, which
    // the kernel attaches itself because the receiver has SO_PASSCRED set.
    ssize_t sent;
    do {
        sent = ::sendmsg(fd, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    const int saved_errno = errno;
    ::close(fd);
    errno = saved_errno;
    return sent == static_cast<ssize_t>(state.size());
}

}  // namespace ncafs
