// The address a connection actually goes to, checked when libcurl opens its
// socket (CURLOPT_OPENSOCKETFUNCTION): after DNS, so a name that resolves
// (or re-resolves) to a loopback, link-local or private address is refused
// unless the URL's host was named by an allow_root= (access_policy.hpp).
#pragma once

#include <string>

struct sockaddr;

namespace ncafs::remote {

// "loopback", "link-local", "private", "unspecified", "multicast" or
// "reserved" for an address a remote partition must not reach by default;
// "" for a public one. IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96)
// and 6to4 IPv6 addresses are judged by the IPv4 address they carry.
std::string non_public_kind(const sockaddr* address);

// "127.0.0.1" / "::1" for messages.
std::string address_text(const sockaddr* address);

// One transfer's check: set before it starts, read after it ended.
struct ConnectCheck {
    bool private_ok = false;  // the URL's host is named by a root: any address
    std::string refused;      // why a connection was refused ("" = none was)
};

// Makes every socket the easy handle opens pass `check` (which must outlive
// the transfer); a refused one fails the transfer (CURLE_COULDNT_CONNECT).
void install_connect_check(void* easy, ConnectCheck* check);

}  // namespace ncafs::remote
