// The FUSE/mount options of a mount: which ones ncafs passes on to libfuse,
// and what every mount gets whatever it was asked (read-only, nosuid, nodev).
#pragma once

#include <string>

#include "fs/options.hpp"

namespace ncafs::fs {

// True when ITEM (one -o item that is not an ncafs option) is a FUSE or mount
// option that ncafs passes on; throws UsageError (exit status 2) when it is
// none of them, instead of leaving libfuse to fail the mount later.
bool is_passed_mount_option(const std::string& item);

// The -o list for fuse_session_new: OPTIONS' FUSE options without suid and
// dev, plus ro, nosuid, nodev, fsname=SOURCE, subtype=ncafs and, with
// allow_other, default_permissions.
std::string fuse_option_list(const MountOptions& options);

}  // namespace ncafs::fs
