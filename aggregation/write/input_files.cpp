#include "aggregation/write/input_files.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>

#include "aggregation/read/path_policy.hpp"
#include "codecs/error.hpp"

namespace ncafs::agg {

namespace fs = std::filesystem;

std::vector<std::string> read_file_list(std::istream& in) {
    std::vector<std::string> files;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) files.push_back(std::move(line));
    }
    return files;
}

namespace {

bool inside(const fs::path& p, const fs::path& root) {
    auto [r, _] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
    return r == root.end();
}

// A walked entry to aggregate: a regular file, or a link to one that stays
// inside the directory.
bool wanted_file(const fs::directory_entry& e, const fs::path& root_real) {
    std::error_code ec;
    if (!e.is_symlink(ec)) return e.is_regular_file(ec);
    fs::path target = fs::canonical(e.path(), ec);
    return !ec && inside(target, root_real) && fs::is_regular_file(target, ec);
}

}  // namespace

std::vector<std::string> walk_directory(const std::string& dir, const std::string& glob, const std::string& exclude) {
    std::error_code ec;
    const fs::path root_real = fs::canonical(dir, ec);
    if (ec) throw SourceError(dir, "cannot read the directory: " + ec.message());
    const bool match_relative = glob.find('/') != std::string::npos;
    const std::string excluded = exclude.empty() ? "" : lexically_normal_absolute(exclude);
    std::vector<std::string> files;
    fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        if (!wanted_file(*it, root_real)) continue;
        const fs::path& p = it->path();
        std::string subject = match_relative ? p.lexically_relative(dir).string() : p.filename().string();
        if (::fnmatch(glob.c_str(), subject.c_str(), match_relative ? FNM_PATHNAME : 0) != 0) continue;
        if (!excluded.empty() && lexically_normal_absolute(p.string()) == excluded) continue;
        files.push_back(p.string());
    }
    if (ec) throw SourceError(dir, "cannot walk the directory: " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace ncafs::agg
