// The system-call filter of a serving daemon and of its outside helper
// (libseccomp): everything is allowed except a list of calls no part of
// ncafs makes and an attacker running code in the process would want
// (mounting, loading kernel code, tracing or reading other processes,
// namespaces, keys, changing user ids, raw handles, io_uring). A refused call
// fails with EPERM, never kills the process: a call missing from our
// reckoning costs an error, not an outage. clone3 answers ENOSYS (its flags
// cannot be inspected), so the C library creates threads and processes with
// clone, whose namespace flags are refused.
#pragma once

#include <string>
#include <vector>

#include "fs/privileges.hpp"

namespace ncafs::fs {

// The names of the calls refused for role (those this architecture has).
std::vector<std::string> refused_system_calls(PrivilegeRole role);

// Installs the role's filter on the calling thread and all it starts later
// (called while the process has one thread; without TSYNC, which needs the
// seccomp system call that systemd's @system-service lacks). Needs
// no-new-privileges or CAP_SYS_ADMIN. Throws std::runtime_error.
void install_syscall_filter(PrivilegeRole role);

}  // namespace ncafs::fs
