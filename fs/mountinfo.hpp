#pragma once

#include <string>

namespace ncafs::fs {

// A path field of /proc/self/mountinfo as the path it names: the kernel
// writes space, tab, newline and backslash there as \ooo.
std::string unescape_mountinfo(const std::string& field);

}  // namespace ncafs::fs
