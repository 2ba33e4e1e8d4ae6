// `ncafs inspect FILE` and `ncafs check FILE...` (wired into the ncafs binary
// by the FUSE layer). Options for both: --root DIR (an allowed root; repeat),
// --rewrite OLD=NEW (path prefix rewrite; repeat). inspect also takes --all
// (list every partition, not only the first 20).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ncafs {

// Prints each master array (name, dims, shape, type, units), its partition
// matrix, coverage, number of files and bytes. Opens no partition.
// Returns 0, or 1 when the file cannot be parsed (message on err), 2 on usage errors.
int inspect_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Opens every partition and verifies it (exists, inside allowed roots,
// readable, variable present, shape, type, units); one line per problem
// naming file and reason on out; gaps are reported as warnings. Returns 0
// only when every file is clean, 1 otherwise, 2 on usage errors.
int check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ncafs
