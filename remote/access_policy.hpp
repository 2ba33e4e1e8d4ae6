// Which remote objects the daemon may fetch: the operator's allow_root= URLs
// (http://HOST[:PORT]/PREFIX, https://..., s3://BUCKET/PREFIX), the remote
// counterpart of the local allowed roots. A root covers a URL with the same
// scheme, host and port whose path lies under the root's path on a segment
// boundary (remote_url.hpp normalises both). A root without a host
// ("https://", "s3://") covers every host of its scheme: a convenience for a
// mount that serves only its owner, refused with allow_other. Without any
// remote root, a mount without allow_other (and export, check) allows
// http://, https:// and s3:// everywhere; with allow_other, nothing.
//
// Loopback, link-local and private addresses are reached only through a root
// that names the host (connect_check.hpp checks the address connected to);
// s3:// objects go to s3_endpoint=, a host the operator named. Credentials
// are attached only after a URL was admitted; redirects are followed only
// into an allowed root and never with credentials (redirect_address).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "remote/object_address.hpp"
#include "remote/remote_url.hpp"

namespace ncafs::remote {

struct RemoteRoot {
    std::string text;  // as written, for messages
    UrlParts parts;    // parts.host "" = any host of the scheme
    bool any_host() const { return parts.host.empty(); }
};

// Parses the value of allow_root=URL. Throws UsageError naming the option.
RemoteRoot parse_remote_root(const std::string& text);

// A redirect target to follow (`address`), or why not (`refusal`).
struct Redirect {
    std::optional<ObjectAddress> address;
    std::string refusal;
};

class AccessPolicy {
public:
    void allow(RemoteRoot root) { roots_.push_back(std::move(root)); }
    // allow_other: no default roots, and no root for any host (throws UsageError).
    void serve_other_users(bool other_users);
    const std::vector<RemoteRoot>& roots() const { return roots_; }

    // Throws SourceError(url, the rule it breaks) unless a root covers url.
    // Returns whether its connections may reach a loopback, link-local or
    // private address (a root names its host; for s3://, s3_endpoint_given).
    bool admit(const std::string& url, bool s3_endpoint_given) const;

    // Where a response of `from` redirects to (`target`, absolute): an
    // unsigned address without `from`'s extra headers when an http(s) root
    // covers it and `from` was not signed.
    Redirect redirect_address(const ObjectAddress& from, const std::string& target) const;

private:
    // The root covering parts (a root naming the host first), or nullptr.
    const RemoteRoot* covering_root(const UrlParts& parts) const;
    std::string rule_text() const;
    std::vector<RemoteRoot> roots_;
    bool other_users_ = false;
};

}  // namespace ncafs::remote
