// Unit tests of the remote access rules (remote/access_policy.hpp,
// remote_url.hpp, connect_check.hpp): which URLs an allow_root= covers,
// spelling tricks that must not widen it, the single-user default and
// allow_other, redirects, and the addresses a connection may reach. The
// expected answers are written out from RFC 3986, RFC 1918/4193/4291/6598
// and the rules in docs/remote.md, not taken from the code.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "codecs/error.hpp"
#include "remote/access_policy.hpp"
#include "remote/connect_check.hpp"

using namespace ncafs::remote;
using ncafs::SourceError;
using ncafs::UsageError;

namespace {

AccessPolicy policy(std::initializer_list<const char*> roots, bool other_users = false) {
    AccessPolicy p;
    for (const char* r : roots) p.allow(parse_remote_root(r));
    p.serve_other_users(other_users);
    return p;
}

bool admitted(const AccessPolicy& p, const std::string& url) {
    try {
        p.admit(url, false);
        return true;
    } catch (const SourceError&) {
        return false;
    }
}

std::string kind_of(const char* text) {
    sockaddr_storage s{};
    if (inet_pton(AF_INET, text, &reinterpret_cast<sockaddr_in*>(&s)->sin_addr) == 1) {
        s.ss_family = AF_INET;
    } else {
        EXPECT_EQ(inet_pton(AF_INET6, text, &reinterpret_cast<sockaddr_in6*>(&s)->sin6_addr), 1) << text;
        s.ss_family = AF_INET6;
    }
    return non_public_kind(reinterpret_cast<sockaddr*>(&s));
}

}  // namespace

TEST(RemoteUrl, NormalisesHostPortAndPath) {
    UrlParts u = parse_remote_url("HTTPS://Data.Example.ORG./a/%62/c.nc?x=1");
    EXPECT_EQ(u.scheme, "https");
    EXPECT_EQ(u.host, "data.example.org");
    EXPECT_EQ(u.port, "443");
    EXPECT_EQ(u.path, "/a/b/c.nc");
    EXPECT_EQ(parse_remote_url("http://127.1:8080/x").host, "127.0.0.1");  // curl's reading of "127.1"
    EXPECT_EQ(parse_remote_url("http://0x7f000001/x").host, "127.0.0.1");
    UrlParts s3 = parse_remote_url("s3://bucket/dir/key%2F.nc");
    EXPECT_EQ(s3.host, "bucket");
    EXPECT_EQ(s3.path, "dir/key%2F.nc");  // an S3 key is literal
}

TEST(RemoteUrl, RefusesAmbiguousSpellings) {
    for (const char* url : {"http://h/a/../b", "http://h/a/%2e%2E/b", "http://h/a/%2e/b", "http://h/a/..;x/b",
                            "http://h/a%5cb", "http://h/a%00b", "http://user@h/x", "http://u:p@h/x",
                            "http://[fe80::1%25eth0]/x", "s3://b/a/../other", "s3://b/./k", "s3://b", "s3:///k",
                            "ftp://h/x", "http://h:99999/x"})
        EXPECT_THROW(parse_remote_url(url), SourceError) << url;
}

TEST(AccessPolicy, RootCoversSchemeHostPortAndPrefixOnSegmentBoundary) {
    AccessPolicy p = policy({"https://data.example.org/pub", "http://127.0.0.1:8080/", "s3://bucket/dir"});
    EXPECT_TRUE(admitted(p, "https://data.example.org/pub"));
    EXPECT_TRUE(admitted(p, "https://data.example.org/pub/a.nc"));
    EXPECT_TRUE(admitted(p, "https://DATA.example.org:443/pub/a.nc"));
    EXPECT_TRUE(admitted(p, "https://data.example.org/%70ub/a.nc"));  // %70 is 'p'
    EXPECT_FALSE(admitted(p, "https://data.example.org/public/a.nc"));
    EXPECT_FALSE(admitted(p, "https://data.example.org/a.nc"));
    EXPECT_FALSE(admitted(p, "http://data.example.org/pub/a.nc"));      // scheme
    EXPECT_FALSE(admitted(p, "https://data.example.org:8443/pub/a.nc"));  // port
    EXPECT_FALSE(admitted(p, "https://data.example.org.evil.net/pub/a.nc"));
    EXPECT_FALSE(admitted(p, "https://data.example.org@evil.net/pub/a.nc"));
    EXPECT_FALSE(admitted(p, "https://data.example.org/pub/../secret/a.nc"));
    EXPECT_FALSE(admitted(p, "https://data.example.org/pub/%2e%2e/secret/a.nc"));
    EXPECT_TRUE(admitted(p, "http://127.0.0.1:8080/anything"));
    EXPECT_TRUE(admitted(p, "http://127.1:8080/anything"));  // the same address as curl reads it
    EXPECT_FALSE(admitted(p, "http://127.0.0.1:8081/anything"));
    EXPECT_FALSE(admitted(p, "http://localhost:8080/anything"));  // another host name
    EXPECT_TRUE(admitted(p, "s3://bucket/dir/k.nc"));
    EXPECT_TRUE(admitted(p, "s3://bucket/dir/sub/k.nc"));
    EXPECT_FALSE(admitted(p, "s3://bucket/directory/k.nc"));
    EXPECT_FALSE(admitted(p, "s3://bucket/k.nc"));
    EXPECT_FALSE(admitted(p, "s3://other/dir/k.nc"));
    EXPECT_FALSE(admitted(p, "s3://bucket/dir/../k.nc"));
}

TEST(AccessPolicy, NamedHostsMayBePrivateAnyHostRootsMayNot) {
    AccessPolicy p = policy({"http://127.0.0.1:8080/", "https://"});
    EXPECT_TRUE(p.admit("http://127.0.0.1:8080/x", false));
    EXPECT_FALSE(p.admit("https://anywhere.example/x", false));
    AccessPolicy s3 = policy({"s3://bucket/"});
    EXPECT_TRUE(s3.admit("s3://bucket/k", true));    // s3_endpoint= names the host
    EXPECT_FALSE(s3.admit("s3://bucket/k", false));  // AWS: public hosts only
}

TEST(AccessPolicy, SingleUserDefaultAndAllowOther) {
    AccessPolicy single = policy({});
    EXPECT_TRUE(admitted(single, "https://anywhere.example/x"));
    EXPECT_TRUE(admitted(single, "http://anywhere.example/x"));
    EXPECT_TRUE(admitted(single, "s3://any-bucket/x"));
    EXPECT_FALSE(single.admit("http://127.0.0.1/x", false));  // reachable only if public
    AccessPolicy shared = policy({}, true);
    EXPECT_FALSE(admitted(shared, "https://anywhere.example/x"));
    EXPECT_FALSE(admitted(shared, "s3://any-bucket/x"));
    try {
        shared.admit("s3://any-bucket/x", true);
        FAIL() << "admitted";
    } catch (const SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("s3://any-bucket/x"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("allow_root="), std::string::npos) << e.what();
    }
    EXPECT_THROW(policy({"https://"}, true), UsageError);
    EXPECT_THROW(policy({"s3://"}, true), UsageError);
    AccessPolicy named = policy({"https://data.example.org/pub"}, true);
    EXPECT_TRUE(admitted(named, "https://data.example.org/pub/x"));
    EXPECT_FALSE(admitted(named, "https://other.example.org/pub/x"));
}

TEST(AccessPolicy, BadRootsAreUsageErrors) {
    for (const char* r : {"https://h/a/../b", "https://u@h/", "https://h/x?q", "ftp://h/", "https://h:0x1/"})
        EXPECT_THROW(parse_remote_root(r), UsageError) << r;
}

TEST(AccessPolicy, RedirectsOnlyIntoRootsAndNeverSigned) {
    AccessPolicy p = policy({"http://127.0.0.1:8080/", "https://mirror.example.org/data"});
    ObjectAddress unsigned_request{"http://127.0.0.1:8080/a", "", "", {"X-Extra: 1"}};
    Redirect inside = p.redirect_address(unsigned_request, "https://mirror.example.org/data/a");
    ASSERT_TRUE(inside.address);
    EXPECT_EQ(inside.address->http_url, "https://mirror.example.org/data/a");
    EXPECT_TRUE(inside.address->headers.empty());
    EXPECT_TRUE(inside.address->sigv4.empty() && inside.address->userpwd.empty());
    EXPECT_TRUE(inside.address->private_ok);  // the root names the host
    Redirect anywhere = policy({"https://"}).redirect_address(unsigned_request, "https://elsewhere.example/a");
    ASSERT_TRUE(anywhere.address);
    EXPECT_FALSE(anywhere.address->private_ok);  // a root for any host names none
    EXPECT_TRUE(p.redirect_address(unsigned_request, "http://127.0.0.1:8080/b").address->private_ok);
    EXPECT_FALSE(p.redirect_address(unsigned_request, "http://127.0.0.1:8081/a").address);  // another port
    EXPECT_FALSE(p.redirect_address(unsigned_request, "https://mirror.example.org/other").address);
    EXPECT_FALSE(p.redirect_address(unsigned_request, "s3://bucket/a").address);
    ObjectAddress signed_request{"http://127.0.0.1:8080/b/k", "aws:amz:us-east-1:s3", "KEY:SECRET",
                                 {"x-amz-content-sha256: UNSIGNED-PAYLOAD"}};
    Redirect refused = p.redirect_address(signed_request, "http://127.0.0.1:8080/b/k2");
    EXPECT_FALSE(refused.address);
    EXPECT_NE(refused.refusal.find("signed"), std::string::npos) << refused.refusal;
}

TEST(ConnectCheck, NonPublicAddresses) {
    EXPECT_EQ(kind_of("127.0.0.1"), "loopback");
    EXPECT_EQ(kind_of("127.255.1.2"), "loopback");
    EXPECT_EQ(kind_of("0.0.0.0"), "unspecified");
    EXPECT_EQ(kind_of("10.1.2.3"), "private");
    EXPECT_EQ(kind_of("172.16.0.1"), "private");
    EXPECT_EQ(kind_of("172.31.255.255"), "private");
    EXPECT_EQ(kind_of("192.168.1.1"), "private");
    EXPECT_EQ(kind_of("100.64.0.1"), "private");
    EXPECT_EQ(kind_of("169.254.169.254"), "link-local");  // cloud instance metadata
    EXPECT_EQ(kind_of("224.0.0.1"), "multicast");
    EXPECT_EQ(kind_of("255.255.255.255"), "reserved");
    EXPECT_EQ(kind_of("::1"), "loopback");
    EXPECT_EQ(kind_of("::"), "unspecified");
    EXPECT_EQ(kind_of("fe80::1"), "link-local");
    EXPECT_EQ(kind_of("fd00::1"), "private");
    EXPECT_EQ(kind_of("fc00::1"), "private");
    EXPECT_EQ(kind_of("ff02::1"), "multicast");
    EXPECT_EQ(kind_of("::ffff:127.0.0.1"), "loopback");
    EXPECT_EQ(kind_of("::ffff:10.0.0.1"), "private");
    EXPECT_EQ(kind_of("::ffff:169.254.169.254"), "link-local");
    EXPECT_EQ(kind_of("64:ff9b::a9fe:a9fe"), "link-local");  // NAT64 of 169.254.169.254
    EXPECT_EQ(kind_of("2002:7f00:1::1"), "loopback");       // 6to4 of 127.0.0.1
    for (const char* pub : {"8.8.8.8", "172.32.0.1", "172.15.255.255", "192.169.0.1", "100.128.0.1", "1.1.1.1",
                            "2001:4860:4860::8888", "::ffff:8.8.8.8", "2606:4700::1111"})
        EXPECT_EQ(kind_of(pub), "") << pub;
}
