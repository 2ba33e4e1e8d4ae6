#include "remote/access_policy.hpp"

#include "io/error.hpp"

namespace ncafs::remote {
namespace {

// "https://" or "s3://": every host (bucket) of the scheme.
std::optional<RemoteRoot> any_host_root(const std::string& text) {
    const std::string scheme = remote_scheme(text);
    if (scheme.empty() || text.size() != scheme.size() + 3) return std::nullopt;
    return RemoteRoot{text, UrlParts{scheme, "", "", ""}};
}

// prefix covers path: equal, or path continues below it after a '/'.
bool under_prefix(const std::string& path, const std::string& prefix) {
    if (prefix.empty() || prefix == "/") return true;
    if (path.compare(0, prefix.size(), prefix) != 0) return false;
    return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

bool covers(const RemoteRoot& root, const UrlParts& url) {
    const UrlParts& r = root.parts;
    if (r.scheme != url.scheme) return false;
    if (root.any_host()) return true;
    return r.host == url.host && r.port == url.port && under_prefix(url.path, r.path);
}

const std::vector<RemoteRoot>& single_user_defaults() {
    static const std::vector<RemoteRoot> roots = {*any_host_root("http://"), *any_host_root("https://"),
                                                  *any_host_root("s3://")};
    return roots;
}

}  // namespace

RemoteRoot parse_remote_root(const std::string& text) {
    if (auto any = any_host_root(text)) return *any;
    try {
        UrlParts parts = parse_remote_url(text, true);
        if (parts.scheme != "s3" && text.find_first_of("?#") != std::string::npos)
            throw UsageError("option allow_root: a remote root has no query or fragment: '" + text + "'");
        return RemoteRoot{text, std::move(parts)};
    } catch (const SourceError& e) {
        throw UsageError("option allow_root: " + std::string(e.what()));
    }
}

void AccessPolicy::serve_other_users(bool other_users) {
    other_users_ = other_users;
    if (!other_users) return;
    for (const RemoteRoot& r : roots_)
        if (r.any_host())
            throw UsageError("option allow_root=" + r.text +
                             " (any host) serves only the mount's owner: with allow_other, name each host or bucket");
}

const RemoteRoot* AccessPolicy::covering_root(const UrlParts& parts) const {
    const std::vector<RemoteRoot>& roots = roots_.empty() && !other_users_ ? single_user_defaults() : roots_;
    const RemoteRoot* found = nullptr;
    for (const RemoteRoot& r : roots)
        if (covers(r, parts) && (!found || found->any_host())) found = &r;
    return found;
}

std::string AccessPolicy::rule_text() const {
    if (roots_.empty()) return "refused: a mount with allow_other reads remote partitions only under an allow_root= URL";
    std::string list;
    for (const RemoteRoot& r : roots_) list += (list.empty() ? "" : ", ") + r.text;
    return "refused: not under an allowed remote root (allow_root=" + list + ")";
}

bool AccessPolicy::admit(const std::string& url, bool s3_endpoint_given) const {
    const UrlParts parts = parse_remote_url(url);
    const RemoteRoot* root = covering_root(parts);
    if (!root) throw SourceError(url, rule_text());
    return parts.scheme == "s3" ? s3_endpoint_given : !root->any_host();
}

Redirect AccessPolicy::redirect_address(const ObjectAddress& from, const std::string& target) const {
    if (!from.sigv4.empty())
        return {std::nullopt, "redirect to " + target + " not followed: a signed request is never redirected"};
    if (remote_scheme(target) == "s3") return {std::nullopt, "redirect to " + target + " refused"};
    try {
        ObjectAddress hop{target, "", "", {}};
        hop.private_ok = admit(target, false);
        return {std::move(hop), ""};
    } catch (const SourceError& e) {
        const std::string why = std::string(e.what()).substr(e.file().size() + 2);  // after "TARGET: "
        return {std::nullopt, "redirect to " + target + " " + why};
    }
}

}  // namespace ncafs::remote
