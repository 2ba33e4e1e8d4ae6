// The arguments `ncafs inspect` and `ncafs check` share: --root DIR (an
// allowed root; repeat), --rewrite OLD=NEW (path prefix rewrite; repeat),
// --all (inspect: every partition), --json (inspect: machine-readable), --verify-coordinates (check: A9),
// -o LIST (check: the remote options of the mount, fs/remote_options.hpp, and
// sandbox=on|off), FILE...
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "aggregation/read/open_aggregation.hpp"
#include "fs/sandbox_policy.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::cli {

struct FileArgs {
    AggregationOptions options;
    std::vector<std::string> files;
    bool all = false;
    bool json = false;  // inspect: a JSON document instead of text
    bool verify_coordinates = false;
    remote::RemoteConfig remote;
    bool sandbox = true;  // -o sandbox=on|off
};

// What the command may read: the files' folders, --root folders, cache_dir= and ca_file=.
fs::SandboxRoots sandbox_roots(const FileArgs& cl);

// Returns false (message and usage of `cmd` on err) on a usage error.
bool parse_file_args(const std::vector<std::string>& args, FileArgs& cl, std::ostream& err, const char* cmd);

}  // namespace ncafs::cli
