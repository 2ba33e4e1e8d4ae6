// Least privilege while serving (and in the confined child of the commands,
// cli/contained.hpp): once the mount is made, the outside helper
// forked and Landlock applied, and before any thread starts, the daemon keeps
// only the capabilities that reading on behalf of callers needs (in every
// set: effective, permitted, inheritable, ambient, bounding), sets
// no-new-privileges and installs a system-call filter (libseccomp) that
// refuses, with EPERM, the calls no part of it makes and an attacker running
// code in it would want. Threads started later inherit all of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncafs::fs {

enum class PrivilegeRole {
    Daemon,         // serves FUSE requests: reads as callers, never mounts
    OutsideHelper,  // unmounts the mount and reads callers' groups (fs/outside_helper.hpp)
    Command,        // the confined child of export, inspect and check: reads as its caller
};

// The capabilities a role keeps when it runs as root (numbers of
// <linux/capability.h>), and their names for the log and the docs.
std::vector<int> kept_capabilities(PrivilegeRole role);
std::string capability_names(const std::vector<int>& caps);

// Drops every other capability from every set of the calling thread (the
// bounding set only with CAP_SETPCAP, i.e. as root), sets no-new-privileges
// (not for a non-root helper: fusermount3 must stay setuid for it), and
// installs the role's filter. Call while the process has a single thread
// (the threads started later inherit it all). Throws
// std::runtime_error when a step fails. Returns a summary for the log.
std::string drop_privileges(PrivilegeRole role);

}  // namespace ncafs::fs
