#include "aggregation/read/path_policy.hpp"

#include <fcntl.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ncafs::agg {

namespace fs = std::filesystem;

namespace {

// "dir/file.nc": relative, no empty, "." or ".." component, no NUL. Joined to
// a lexically normal folder it is already lexically normal (the common case
// of a million partitions, kept off std::filesystem).
bool is_plain_relative(const std::string& name) {
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
                       std::vector<std::pair<std::string, std::string>> rewrites)
    : aggregation_file_(lexically_normal_absolute(aggregation_file)), rewrites_(std::move(rewrites)) {
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

std::string PathPolicy::resolve(const std::string& name_in, bool base_given, const std::string& base) const {
    std::string name = name_in;
    if (name.rfind("file://", 0) == 0) {
        name = name.substr(7);  // file:///x -> /x ; an authority other than empty/localhost is refused below
        if (name.rfind("localhost/", 0) == 0) name = name.substr(9);
        if (name.empty() || name[0] != '/') throw std::runtime_error("file URI with a host is not a local path: " + name_in);
    } else if (auto colon = name.find("://"); colon != std::string::npos && colon < 16) {
        throw std::runtime_error("remote URI not supported: " + name_in);
    }
    // Section 1.8 recommendation: names (after base) are references resolved
    // against the aggregation file's folder; absolute names are kept.
    std::string resolved;
    if (!base_given && is_plain_relative(name)) {
        resolved = (folder_ == "/" ? std::string() : folder_) + "/" + name;
    } else {
        fs::path p(name);
        if (p.is_relative()) {
            fs::path b = base_given ? fs::path(base) : fs::path();
            if (b.is_relative()) b = fs::path(folder_) / b;
            p = b / p;
        }
        resolved = lexically_normal_absolute(p.string());
    }
    for (const auto& [from, to] : rewrites_) {
        std::string f = lexically_normal_absolute(from);
        if (path_is_under(resolved, f)) {
            resolved = lexically_normal_absolute(to + "/" + resolved.substr(f.size()));
            break;
        }
    }
    if (!lexically_allowed(resolved))
        throw std::runtime_error("path " + resolved + " (from \"" + name_in + "\") is outside the allowed roots");
    return resolved;
}

bool PathPolicy::physically_allowed(const std::string& path) const {
    OpenResult r = confinement_->open(path, O_PATH);
    return r.fd || (r.error != EXDEV && r.error != EACCES);
}

const ConfinedRoots* PathPolicy::confinement_of_aggregation_file() const {
    return lexically_allowed(aggregation_file_) ? confinement_.get() : nullptr;
}

}  // namespace ncafs::agg
