// What the commands that read datasets (export, check, inspect) may read.
// A caller other than root that controls every FILE it names reads like any
// netCDF tool: every file its own rights let it read. Root, or a caller
// naming a FILE that another user could write or replace, reads partitions
// beneath each FILE's folder and the allow_root= folders only: a crafted
// file must not make root (or its victim) read what it was not given
// (docs/security.md, "The commands").
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace ncafs::cli {

struct ReadScope {
    bool callers_rights = false;  // read with the caller's rights: every root is "/"
    std::string rule;             // why not: the rule refusal messages name
};

// The scope for a run by the effective user over files (command line
// names; a view name counts as the dataset file it stands for).
ReadScope read_scope(const std::vector<std::string>& files);

// nullopt when the user `caller` controls `file`: owns it, no one else may
// write it, and every folder on its way (as named and after symlinks)
// belongs to the caller or root and is writable by no one else (or
// sticky, like /tmp). Else the reason, naming the file or folder.
std::optional<std::string> not_controlled(const std::string& file, uid_t caller);

}  // namespace ncafs::cli
