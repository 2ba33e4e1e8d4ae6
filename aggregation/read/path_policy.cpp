#include "aggregation/read/path_policy.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "aggregation/write/cf_writer.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

namespace fs = std::filesystem;

namespace {

// A lexically normal relative name, "dir/file.nc": relative, no empty, "." or
// ".." component, no NUL. Joined to a lexically normal folder it is already
// lexically normal (the common case of a million partitions, kept off
// std::filesystem).
bool is_normal_relative(const std::string& name) {
    if (name.empty() || name.front() == '/' || name.back() == '/' || name.find('\0') != std::string::npos) return false;
    size_t begin = 0;
    while (begin <= name.size()) {
        size_t end = name.find('/', begin);
        if (end == std::string::npos) end = name.size();
        const std::string_view part(name.data() + begin, end - begin);
        if (part.empty() || part == "." || part == "..") return false;
        begin = end + 1;
    }
    return true;
}

}  // namespace

PathPolicy::PathPolicy(const std::string& aggregation_file, std::vector<std::string> allowed_roots,
                       std::vector<std::pair<std::string, std::string>> rewrites, MissingPartitions missing,
                       std::string roots_rule)
    : aggregation_file_(lexically_normal_absolute(aggregation_file)), rewrites_(std::move(rewrites)),
      missing_(std::move(missing)), roots_rule_(std::move(roots_rule)) {
    folder_ = fs::path(aggregation_file_).parent_path().string();
    if (folder_.empty()) folder_ = "/";
    if (allowed_roots.empty()) allowed_roots.push_back(folder_);
    for (const auto& r : allowed_roots) {
        roots_.push_back(lexically_normal_absolute(r));
    }
    confinement_ = std::make_shared<const ConfinedRoots>(roots_);
}

bool PathPolicy::lexically_allowed(const std::string& path) const {
    for (const auto& r : roots_)
        if (path_is_under(path, r)) return true;
    return false;
}

namespace {

// The folder to suggest for allow_root=: below what path shares with the
// aggregation's folder, the first folder on path's side (nca/ and
// parts/d0/p.nc: parts), so one root admits a sibling tree of partitions.
std::string suggested_root(const std::string& folder, const std::string& path) {
    const fs::path target = fs::path(path).parent_path(), base(folder);
    fs::path suggestion;
    auto b = base.begin();
    for (const auto& part : target) {
        suggestion /= part;
        if (b == base.end() || *b != part) return suggestion.string();
        ++b;
    }
    return target.string();
}

}  // namespace

std::string PathPolicy::outside_roots(const std::string& path_in) const {
    // A name a reader kept as written (refused before resolution): relative to the folder.
    const std::string path = path_in.empty() || path_in[0] != '/' ? lexically_normal_absolute(folder_ + "/" + path_in)
                                                                  : path_in;
    std::string roots;
    for (const auto& r : roots_) roots += (roots.empty() ? "" : ", ") + r;
    return "outside the allowed roots (" + roots + "): " +
           (roots_rule_.empty() ? "partitions are read only beneath them" : roots_rule_) + "; -o allow_root=" +
           suggested_root(folder_, path) + " admits it";
}

namespace {

// base joined with a relative name, as a folder (like the local base rule).
std::string join_url(const std::string& base, const std::string& name) {
    return base + (base.empty() || base.back() == '/' ? "" : "/") + name;
}

bool is_s3(const std::string& url) { return url.size() >= 5 && (url[0] | 0x20) == 's' && url.compare(1, 4, "3://") == 0; }

// name is prefix itself or lies below it ("http://h/p" covers "http://h/p/x", not "http://h/px").
bool url_is_under(const std::string& name, const std::string& prefix) {
    return name.rfind(prefix, 0) == 0 &&
           (name.size() == prefix.size() || prefix.back() == '/' || name[prefix.size()] == '/');
}

// A local path without file:// (file:///x -> /x); throws for a remote host.
std::string local_name(const std::string& name) {
    if (name.rfind("file://", 0) != 0) {
        if (auto colon = name.find("://"); colon != std::string::npos && colon < 16)
            throw std::runtime_error("URI scheme not supported (only file:, http:, https: and s3:): " + name);
        return name;
    }
    std::string path = name.substr(7);  // file:///x -> /x ; an authority other than empty/localhost is refused below
    if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
    if (path.empty() || path[0] != '/') throw std::runtime_error("file URI with a host is not a local path: " + name);
    return path;
}

}  // namespace

std::string PathPolicy::rewritten(const std::string& name) const {
    const bool remote = remote::is_remote_url(name);
    for (const auto& [from, to] : rewrites_) {
        if (remote::is_remote_url(from) != remote) continue;
        std::string f = remote ? from : lexically_normal_absolute(from);
        if (remote ? !url_is_under(name, f) : !path_is_under(name, f)) continue;
        std::string rest = name.substr(f.size());
        if (remote::is_remote_url(to)) {
            if (!rest.empty() && rest[0] == '/') rest = rest.substr(1);
            // An S3 key is literal (remote/ encodes it); an http(s) path is sent as written.
            return join_url(to, remote || is_s3(to) ? rest : uri_path_encode(rest));
        }
        return lexically_normal_absolute(to + "/" + rest);
    }
    return name;
}

std::string PathPolicy::resolve_with_base(const std::string& name, bool base_given, const std::string& base) const {
    fs::path p(name);
    if (p.is_relative() && base_given && remote::is_remote_url(base)) return rewritten(join_url(base, p.string()));
    if (p.is_relative()) {
        fs::path b = base_given ? fs::path(base) : fs::path();
        if (b.is_relative()) b = fs::path(folder_) / b;
        p = b / p;
    }
    return rewritten(lexically_normal_absolute(p.string()));
}

std::string PathPolicy::resolve(const std::string& name_in, bool base_given, const std::string& base) const {
    std::string resolved;
    if (remote::is_remote_url(name_in)) {
        resolved = rewritten(name_in);
    } else {
        const std::string name = local_name(name_in);
        // Section 1.8 recommendation: names (after base) are references resolved
        // against the aggregation file's folder; absolute names are kept.
        if (!base_given && is_normal_relative(name)) {  // the common case: no fs::path built
            resolved = rewritten((folder_ == "/" ? std::string() : folder_) + "/" + name);
        } else {
            resolved = resolve_with_base(name, base_given, base);
        }
    }
    if (remote::is_remote_url(resolved)) return resolved;  // remote/ opens it or refuses it (remote=no)
    if (!lexically_allowed(resolved))
        throw std::runtime_error("path " + resolved + " (from \"" + name_in + "\") is " + outside_roots(resolved));
    return resolved;
}

const ConfinedRoots* PathPolicy::confinement_of_aggregation_file() const {
    return lexically_allowed(aggregation_file_) ? confinement_.get() : nullptr;
}

}  // namespace ncafs::agg
