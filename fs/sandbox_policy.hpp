// What the kernel sandbox (fs/landlock.hpp) lets ncafs open: read beneath its
// data roots, read-write beneath cache_dir, read of the few system files its
// libraries need (docs/security.md, "Contained by the kernel", lists them), nothing else; and
// whether to apply it at all (sandbox=on|off, kernels without Landlock).
#pragma once

#include <string>
#include <vector>

#include "aggregation/read/remote_objects.hpp"

namespace ncafs::fs {

struct SandboxRoots {
    std::vector<std::string> read;  // SOURCE, allow_root=, a command's files' folders
    std::vector<std::string> read_executable;  // extra plugin folders (tests)
    agg::RemoteConfig remote;       // cache_dir= (read-write), ca_file= (read)
    std::vector<std::string> write_files;  // files opened for writing afterwards
};

// Builds the rules and restricts the calling process (single-threaded) to
// them; roots that do not exist are skipped (nothing beneath them opens):
// open cache_dir before (agg::configure_remote_objects creates it).
// Throws std::runtime_error naming what failed.
void enter_sandbox(const SandboxRoots& roots);

// The answer to "restrict this process?": Yes; No with a warning to log
// (sandbox=off, or no Landlock without allow_other); Refuse with the message
// (allow_other where the kernel has no Landlock and sandbox=off was not given).
struct SandboxDecision {
    enum Kind { Yes, No, Refuse } kind;
    std::string message;
};
SandboxDecision decide_sandbox(bool wanted, bool allow_other);

}  // namespace ncafs::fs
