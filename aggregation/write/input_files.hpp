// Where `ncafs aggregate` gets its partition list besides the command line
// (which E2BIG caps near 100,000 paths): a list of paths, one a line, from a
// file or standard input; and a directory walk (recursive, sorted, file names
// matching a glob, symbolic links never followed out of the directory).
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace ncafs::agg {

// One path a line; empty lines are skipped, a trailing '\r' is dropped.
std::vector<std::string> read_file_list(std::istream& in);

// Regular files under `dir` (also through symbolic links whose target is a
// regular file inside `dir`; linked directories are not entered) whose name
// matches `glob` (fnmatch; a glob with '/' matches the path relative to dir),
// sorted by path, skipping `exclude` (the output file). Throws SourceError
// naming the directory when it cannot be read.
std::vector<std::string> walk_directory(const std::string& dir, const std::string& glob, const std::string& exclude);

}  // namespace ncafs::agg
