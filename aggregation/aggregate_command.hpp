// `ncafs aggregate [--dim NAME]... [--relative|--absolute] [--classic]
// [--files-from FILE|-] [--glob PATTERN] -o OUT.nc [FILE|DIR]...` (wired into
// the ncafs binary by the FUSE layer): writes a CF-1.13 aggregation file over
// partition files that tile along the named dimensions (default: the first
// file's unlimited dimension). Paths come from the arguments (a DIR is walked
// for names matching --glob) and from list files or standard input; a
// progress line is drawn when stderr is a terminal.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ncafs {

// Returns 0 on success (summary on out, warnings on err), 1 when the inputs
// cannot be aggregated (one line per difference on err), 2 on usage errors.
int aggregate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ncafs
