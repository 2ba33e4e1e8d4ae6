#include "remote/connect_check.hpp"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>

namespace ncafs::remote {
namespace {

bool in_v4(uint32_t a, uint32_t net, int bits) { return bits == 0 || (a >> (32 - bits)) == (net >> (32 - bits)); }

uint32_t v4(int a, int b, int c, int d) {
    return static_cast<uint32_t>(a) << 24 | static_cast<uint32_t>(b) << 16 | static_cast<uint32_t>(c) << 8 |
           static_cast<uint32_t>(d);
}

std::string ipv4_kind(uint32_t a) {
    if (in_v4(a, v4(127, 0, 0, 0), 8)) return "loopback";
    if (in_v4(a, v4(0, 0, 0, 0), 8)) return "unspecified";
    if (in_v4(a, v4(169, 254, 0, 0), 16)) return "link-local";
    if (in_v4(a, v4(10, 0, 0, 0), 8) || in_v4(a, v4(172, 16, 0, 0), 12) || in_v4(a, v4(192, 168, 0, 0), 16) ||
        in_v4(a, v4(100, 64, 0, 0), 10))  // RFC 1918 and carrier-grade NAT (RFC 6598)
        return "private";
    if (in_v4(a, v4(224, 0, 0, 0), 4)) return "multicast";
    if (in_v4(a, v4(240, 0, 0, 0), 4) || in_v4(a, v4(192, 0, 0, 0), 24) || in_v4(a, v4(198, 18, 0, 0), 15))
        return "reserved";
    return "";
}

uint32_t v4_at(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 |
           p[3];
}

bool all_zero(const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (p[i]) return false;
    return true;
}

std::string ipv6_kind(const uint8_t* a) {
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (all_zero(a, 15)) return a[15] == 1 ? "loopback" : a[15] == 0 ? "unspecified" : "reserved";
    // Addresses that carry an IPv4 address reach it: judged by it.
    if (std::memcmp(a, mapped, 12) == 0 || std::memcmp(a, nat64, 12) == 0 || all_zero(a, 12))
        return ipv4_kind(v4_at(a + 12));
    if (a[0] == 0x20 && a[1] == 0x02) return ipv4_kind(v4_at(a + 2));  // 6to4
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return "link-local";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) return "private";  // deprecated site-local
    if ((a[0] & 0xfe) == 0xfc) return "private";                  // unique local (ULA)
    if (a[0] == 0xff) return "multicast";
    return "";
}

curl_socket_t open_checked_socket(void* user, curlsocktype purpose, curl_sockaddr* address) {
    auto* check = static_cast<ConnectCheck*>(user);
    if (purpose == CURLSOCKTYPE_IPCXN && !check->private_ok) {
        const sockaddr* a = &address->addr;
        std::string kind = address->family == AF_INET || address->family == AF_INET6 ? non_public_kind(a) : "non-IP";
        if (!kind.empty()) {
            check->refused = "refused to connect to " + address_text(a) + ", a " + kind +
                             " address (allowed only when an allow_root= names the host)";
            return CURL_SOCKET_BAD;
        }
    }
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

}  // namespace

std::string non_public_kind(const sockaddr* address) {
    if (address->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(address);
        return ipv4_kind(ntohl(in->sin_addr.s_addr));
    }
    if (address->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
        return ipv6_kind(in6->sin6_addr.s6_addr);
    }
    return "non-IP";
}

std::string address_text(const sockaddr* address) {
    char text[INET6_ADDRSTRLEN] = "?";
    if (address->sa_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
    else if (address->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text, sizeof text);
    return text;
}

void install_connect_check(void* easy, ConnectCheck* check) {
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_checked_socket);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, check);
}

}  // namespace ncafs::remote
