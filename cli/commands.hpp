// The commands of the ncafs binary, all with one signature: args are the
// arguments after the command name; text goes to out and err; the result is
// the exit status: 0 success, 1 failure (message on err), 2 usage error.
// cli/main.cpp dispatches on the first argument (mount when it names none).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ncafs::cli {

// `ncafs SOURCE MOUNTPOINT [-o opts]...` (also -h/--help, -V/--version):
// mounts SOURCE read-only and serves it until unmounted.
int run_mount(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `ncafs export FILE [-o OUT] [-o opts]`: writes the bytes a mount would serve
// for FILE (an aggregation: its virtual .nc; anything else: its own bytes)
// without FUSE, in big blocks, with a progress bar when stderr is a terminal.
// The bytes go to OUT or to file descriptor 1.
int run_export(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `ncafs inspect FILE` and `ncafs check FILE...`. Options for both: --root DIR
// (an allowed root; repeat), --rewrite OLD=NEW (path prefix rewrite; repeat).
// inspect also takes --all (list every partition, not only the first 20) and
// --json (the same report as a JSON document).
//
// inspect prints each master array of any convention (name, dims, shape,
// type, units), its partition matrix, coverage, number of files and bytes, a
// coverage map per aggregated dimension and the missing files. Opens no
// partition: files are stat'ed through the confinement.
int run_inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// check opens every partition and verifies it (exists, inside allowed roots,
// readable, variable present, shape, type, units); one line per problem
// naming file and reason on out; gaps are reported as warnings. Returns 0
// only when every file is clean.
int run_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `ncafs aggregate [--dim NAME]... [--relative|--absolute] [--classic]
// [--files-from FILE|-] [--glob PATTERN] -o OUT.nc [FILE|DIR]...`: writes a
// CF-1.13 aggregation file over partition files that tile along the named
// dimensions (default: the first file's unlimited dimension). Paths come from
// the arguments (a DIR is walked for names matching --glob) and from list
// files or standard input; a progress line is drawn when stderr is a
// terminal. Summary on out; warnings and differences on err.
// clear-dead-mount SOURCE MOUNTPOINT: unmounts a dead fuse.ncafs mount of
// SOURCE at MOUNTPOINT (its daemon was killed); leaves any other mount alone.
int run_clear_dead_mount(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

int run_aggregate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ncafs::cli
