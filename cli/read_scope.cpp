#include "cli/read_scope.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cli/file_args.hpp"

namespace ncafs::cli {

namespace {

// A user private group (Debian's USERGROUPS_ENAB): named as the caller, no other member listed.
bool is_private_group(gid_t gid, uid_t caller) {
    const group* g = ::getgrgid(gid);
    const passwd* p = ::getpwuid(caller);
    return g && p && std::strcmp(g->gr_name, p->pw_name) == 0 && (!g->gr_mem || !g->gr_mem[0]);
}

// Someone other than the caller (and root) may write: a group that is not
// the caller's own, or everybody.
bool others_may_write(const struct stat& st, uid_t caller) {
    return (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && !is_private_group(st.st_gid, caller));
}

std::optional<std::string> judge_folder(const std::string& folder, uid_t caller) {
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) return folder + ": " + std::strerror(errno);
    if (st.st_uid != caller && st.st_uid != 0)
        return "its folder " + folder + " belongs to uid " + std::to_string(st.st_uid);
    if (others_may_write(st, caller) && !(st.st_mode & S_ISVTX)) return "its folder " + folder + " is writable by others";
    return std::nullopt;
}

// Every folder the kernel passes through on the way to path's last component.
std::optional<std::string> judge_folders(const std::filesystem::path& path, uid_t caller) {
    std::filesystem::path folder;
    for (auto it = path.begin(); it != path.end() && std::next(it) != path.end(); ++it) {
        folder /= *it;
        if (auto why = judge_folder(folder.string(), caller)) return why;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> not_controlled(const std::string& file, uid_t caller) {
    std::error_code ec;
    const std::filesystem::path named = std::filesystem::absolute(file, ec);
    const std::filesystem::path real = ec ? named : std::filesystem::canonical(file, ec);
    struct stat st {};
    if (ec || ::stat(real.c_str(), &st) != 0) return file + ": cannot be found";
    if (st.st_uid != caller) return file + " belongs to uid " + std::to_string(st.st_uid);
    if (others_may_write(st, caller)) return file + " is writable by others";
    for (const auto& path : {named, real})
        if (auto why = judge_folders(path, caller)) return file + ": " + *why;
    return std::nullopt;
}

ReadScope read_scope(const std::vector<std::string>& files) {
    const uid_t caller = ::geteuid();
    constexpr const char* kBeneath = "partitions are read beneath FILE's folder and the allow_root= folders only";
    if (caller == 0) return {false, std::string("run by root, ") + kBeneath};
    for (const auto& file : files)
        if (auto why = not_controlled(view_source_file(file), caller))
            return {false, "not the caller's own file (" + *why + "), " + kBeneath};
    return {true, {}};
}

}  // namespace ncafs::cli
