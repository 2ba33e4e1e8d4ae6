// The kernel sandbox for the commands that read datasets (export, inspect,
// check): their work runs in a child process confined, before it reads
// anything, to the folders of the files they are given, --root /
// allow_root= folders, cache_dir= and the system files (fs/sandbox_policy.hpp).
// The calling process stays free: it removes a half-written output after a
// failure, and a program that calls a command in-process (the tests) is not
// confined by it.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "fs/sandbox_policy.hpp"

namespace ncafs::cli {

// The folder a command line FILE lies in (absolute, symlinks resolved).
std::string folder_of(const std::string& file);

using ConfinedWork = std::function<int(std::ostream& out, std::ostream& err)>;

// Runs work confined to roots in a child process; its text reaches out and
// err when it ends. Returns its exit status; a child that died (a signal: a
// crash in a parser, the kernel's OOM killer) returns 1 after one line on
// err naming the file it was reading (`subject`, or the last one the child
// named with name_confined_subject) and the signal. With wanted false, or
// without Landlock (then with a warning on err), runs work here unconfined.
int run_confined(const fs::SandboxRoots& roots, bool wanted, std::ostream& out, std::ostream& err,
                 const std::string& subject, const ConfinedWork& work);

// "A, B, C": the files of a command line, the default subject.
std::string subject_of(const std::vector<std::string>& files);

// In the confined child: the file it reads from now on, for the message
// should it die (nothing outside run_confined's child).
void name_confined_subject(const std::string& file);

}  // namespace ncafs::cli
