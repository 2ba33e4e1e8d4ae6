// The arguments `ncafs inspect` and `ncafs check` share: --root DIR (an
// allowed root besides FILE's folder; repeat), --rewrite OLD=NEW (path prefix rewrite; repeat),
// --all (inspect: every partition), --json (inspect: machine-readable), --verify-coordinates (check: A9),
// -o LIST (the remote options of the mount, fs/remote_options.hpp,
// allow_root=DIR, missing_partitions= and sandbox=on|off), FILE...
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "aggregation/read/open_aggregation.hpp"
#include "cli/read_scope.hpp"
#include "fs/sandbox_policy.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::cli {

struct FileArgs {
    AggregationOptions options;  // allowed_roots: the --root and -o allow_root= folders (besides FILE's)
    ReadScope scope;             // set by parse_file_args
    std::vector<std::string> files;
    bool all = false;
    bool json = false;  // inspect: a JSON document instead of text
    bool verify_coordinates = false;
    remote::RemoteConfig remote;
    bool sandbox = true;  // -o sandbox=on|off
};

// What the command may read: the files' folders, --root and allow_root=
// folders, cache_dir= and ca_file=; everything with the caller's rights.
fs::SandboxRoots sandbox_roots(const FileArgs& cl);

// The aggregation options for one FILE: its roots (cl.scope) and the rule
// a refusal names.
AggregationOptions options_for(const FileArgs& cl, const std::string& file);

// A dataset file as the mount counts one: a regular file with a dataset's
// magic number, or a folder NAME.vds holding an OpenVDS volume.
bool is_dataset_file(const std::string& path);

// The file behind FILE: FILE itself when it exists, else the dataset file
// beside it whose view the mount shows under FILE's name (fs/view_names.hpp;
// NAME.nc of an aggregation NAME.nca, NAME.lod1.nc...), else FILE.
std::string view_source_file(const std::string& file);

// Every FILE replaced by view_source_file(FILE).
void resolve_view_names(FileArgs& cl);

// Returns false (message and usage of `cmd` on err) on a usage error.
bool parse_file_args(const std::vector<std::string>& args, FileArgs& cl, std::ostream& err, const char* cmd);

}  // namespace ncafs::cli
