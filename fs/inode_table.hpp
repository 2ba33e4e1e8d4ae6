// Inode numbers of a mount: one per virtual path the kernel has looked up,
// counted by lookups and dropped on forget. Numbers are never reused while
// mounted, so the kernel's page cache of a dropped inode cannot leak into a
// new one.
#pragma once

#include <fuse_lowlevel.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "io/open_file.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

class InodeTable {
public:
    InodeTable();
    // The inode of a path, created if needed; adds one lookup reference.
    fuse_ino_t lookup(const std::string& virtual_path);
    // Returns true when the inode was dropped (its last lookup forgotten).
    bool forget(fuse_ino_t ino, uint64_t count);
    std::optional<std::string> path_of(fuse_ino_t ino) const;
    // Records the identity of what the inode served last; returns true when
    // it differs from the previous one (the kernel caches must be dropped).
    bool note_identity(fuse_ino_t ino, const FileIdentity& identity);
    // A read of ino failed while the kernel's page cache was in use, where a
    // short read is possible (later opens: direct I/O). Forgotten when what
    // ino serves changes (identity or partitions) or ino is dropped.
    void note_read_failure(fuse_ino_t ino) { set_read_failure(ino, true); }
    void forget_read_failure(fuse_ino_t ino) { set_read_failure(ino, false); }
    bool had_read_failure(fuse_ino_t ino) const;
    size_t size() const;

private:
    void set_read_failure(fuse_ino_t ino, bool failed);
    struct Node {
        std::string path;
        uint64_t lookups = 0;
        std::optional<FileIdentity> identity;
        bool read_failed = false;
    };
    mutable Mutex mutex_;  // lock order: a leaf
    fuse_ino_t next_ NCAFS_GUARDED_BY(mutex_) = FUSE_ROOT_ID + 1;
    std::unordered_map<fuse_ino_t, Node> nodes_ NCAFS_GUARDED_BY(mutex_);
    std::unordered_map<std::string, fuse_ino_t> by_path_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::fs
