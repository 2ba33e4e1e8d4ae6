// A caller's supplementary groups, whole: the "Groups:" line of
// /proc/TID/task/TID/status, every one of them however many (the kernel
// allows 65,536). The same status file's filesystem uid and gid must be the
// request's, so a thread that ended (its number reused) or changed identity
// since its request is not judged by another's groups. Anything unexpected
// (unreadable, cut short, a word that is not a number) is "unknown", never
// a partial list: the caller is then refused.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace ncafs::fs {

// Parses a status file's text; nullopt when its Uid/Gid filesystem fields
// are not fsuid/fsgid or the Groups line is missing, cut or malformed.
std::optional<std::vector<gid_t>> groups_from_status(const std::string& status, uid_t fsuid, gid_t fsgid);

// Reads /proc/TID/task/TID/status whole and parses it.
std::optional<std::vector<gid_t>> groups_of_thread(pid_t tid, uid_t fsuid, gid_t fsgid);

}  // namespace ncafs::fs
