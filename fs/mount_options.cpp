#include "fs/mount_options.hpp"

#include <algorithm>
#include <vector>

#include "codecs/error.hpp"

namespace ncafs::fs {

namespace {

// Flags libfuse turns into mount(2) flags, and its session options.
// mount.fuse3 adds dev,suid for root: accepted here, then dropped below.
constexpr const char* kMountFlags[] = {
    "dev", "nodev", "suid", "nosuid", "exec", "noexec", "atime", "noatime", "relatime", "norelatime",
    "sync", "async", "dirsync", "allow_other", "allow_root", "default_permissions"};
constexpr const char* kValuedOptions[] = {"fsname=", "subtype=", "max_read="};

// Whoever writes SOURCE could place a setuid-root program or a device node
// there: no mount of ncafs honours either, however it was made.
bool is_unsafe_flag(const std::string& item) { return item == "suid" || item == "dev"; }

// libfuse splits -o lists at commas; a comma or backslash inside a value
// (fsname=SOURCE) must be escaped.
std::string escape_option_value(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == ',' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

bool has_option(const std::vector<std::string>& options, const std::string& key) {
    return std::any_of(options.begin(), options.end(),
                       [&](const std::string& o) { return o == key || o.rfind(key + "=", 0) == 0; });
}

}  // namespace

bool is_passed_mount_option(const std::string& item) {
    for (const char* flag : kMountFlags)
        if (item == flag) return true;
    for (const char* prefix : kValuedOptions)
        if (item.rfind(prefix, 0) == 0) return true;
    throw UsageError("unknown option '" + item + "' (see --help)");
}

std::string fuse_option_list(const MountOptions& options) {
    std::vector<std::string> list;
    for (const auto& o : options.fuse_options)
        if (!is_unsafe_flag(o) && o != "nosuid" && o != "nodev") list.push_back(o);
    list.insert(list.end(), {"ro", "nosuid", "nodev"});
    if (!has_option(list, "fsname")) list.push_back("fsname=" + escape_option_value(options.source));
    if (!has_option(list, "subtype")) list.push_back("subtype=ncafs");
    // With allow_other the kernel must check permissions against the modes
    // shown (the source's), or any user could read what SOURCE hides.
    if (options.allow_other && !has_option(list, "default_permissions")) list.push_back("default_permissions");
    std::string joined;
    for (const auto& o : list) joined += (joined.empty() ? "" : ",") + o;
    return joined;
}

}  // namespace ncafs::fs
