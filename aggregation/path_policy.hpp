// Where partition files may come from. Names are resolved like URI
// references against the aggregation file's folder (after `base`), prefix
// rewrites are applied, and the result must stay under an allowed root: an
// aggregation file must never make the daemon serve /etc/shadow.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ncafs::agg {

class PathPolicy {
public:
    // aggregation_file: the backing path as found (not realpath'ed: a relative
    // name is relative to the folder the file was found in, like cfdm's
    // abspath). allowed_roots empty => that folder's tree only.
    PathPolicy(const std::string& aggregation_file, std::vector<std::string> allowed_roots,
               std::vector<std::pair<std::string, std::string>> rewrites);

    const std::string& aggregation_file() const { return aggregation_file_; }
    const std::string& aggregation_folder() const { return folder_; }
    const std::vector<std::string>& allowed_roots() const { return roots_; }

    // Lexical resolution only (no file system access besides none): joins
    // base/name, normalises, applies rewrites, and refuses a path lexically
    // outside every allowed root. Throws std::runtime_error with the reason.
    // `base_given`: whether the JSON had a base key; `name` may be a file:// URI.
    std::string resolve(const std::string& name, bool base_given, const std::string& base) const;

    // True when path, with every symlink resolved, lies under an allowed root
    // (also with symlinks resolved). Checked before a partition is opened.
    bool physically_allowed(const std::string& path) const;

private:
    bool lexically_allowed(const std::string& path) const;
    std::string aggregation_file_;
    std::string folder_;
    std::vector<std::string> roots_;           // lexically normal absolute
    std::vector<std::string> canonical_roots_;  // with symlinks resolved (when they exist)
    std::vector<std::pair<std::string, std::string>> rewrites_;
};

// "a/./b/../c" -> "a/c"; absolute in, absolute out; never touches the disk.
std::string lexically_normal_absolute(const std::string& path);
// True when path equals root or lies below it (component-wise).
bool path_is_under(const std::string& path, const std::string& root);

}  // namespace ncafs::agg
