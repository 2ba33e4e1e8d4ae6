// `ncafs export FILE [-o OUT] [-o opts]`: writes the bytes a mount would serve
// for FILE (an aggregation: its virtual .nc; anything else: its own bytes)
// without FUSE, in big blocks, with a progress bar when stderr is a terminal.
#pragma once

#include <string>
#include <vector>

namespace ncafs::fs {

// args: everything after "export". Returns the exit status.
int export_command(const std::vector<std::string>& args, const char* program);

}  // namespace ncafs::fs
