// Remembers why a VDS container could not be read, per file identity
// (device, inode, size, mtime, ctime): a hostile container costs its parse
// once, and every later lookup of the same unchanged file gets the same
// FormatError at once. A changed file has a new identity and is parsed
// again. Only FormatErrors are kept (I/O errors may pass). Bounded,
// thread-safe, process-wide.
#pragma once

#include <cstddef>
#include <optional>

#include "codecs/error.hpp"
#include "io/open_file.hpp"

namespace ncafs::vds {

constexpr size_t kDefaultFailureMemoEntries = 4096;

// The failure remembered for this identity, if any.

std::optional<FormatError> remembered_failure(const FileIdentity& file);
void remember_failure(const FileIdentity& file, const FormatError& error);
// 0 turns the memo off (the fuzz target reuses one inode for every input).
void set_failure_memo_entries(size_t entries);

}  // namespace ncafs::vds
