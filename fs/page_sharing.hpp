// Who shares the kernel's page cache of a view (with allow_other). Pages a
// reader fills are served by the kernel to every other open of the same
// inode without asking the daemon, so they must only hold bytes every such
// reader was checked for: the handles that read through the page cache at
// once are those judged at one access generation (fs/filesystem.hpp), or
// all of one caller. An open that would break that reads with direct I/O;
// a page-cache handle whose grant went stale may be judged again only
// while no other caller reads through the pages (else its reads fail).
// Thread-safe.
#pragma once

#include <fuse_lowlevel.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "io/mutex.hpp"

namespace ncafs::fs {

class PageSharing {
public:
    struct Admission {
        bool pages = false;       // may read through the page cache (else direct I/O)
        bool invalidate = false;  // the kernel's pages of ino are of another generation: drop them first
    };
    // A view handle of caller `who`, judged at `generation`, opening ino.
    Admission admit(fuse_ino_t ino, const std::string& who, uint64_t generation);
    // A page-cache handle admitted before closes.
    void release(fuse_ino_t ino, const std::string& who);
    // Whether a caller other than `who` holds page-cache handles of ino.
    bool others_hold(fuse_ino_t ino, const std::string& who);
    // A page-cache handle of `who`, judged again at `generation`: true (its
    // pages are of that generation from now on) when no other caller holds
    // page-cache handles of ino.
    bool judged_again(fuse_ino_t ino, const std::string& who, uint64_t generation);
    // The kernel dropped ino.
    void forget(fuse_ino_t ino);

private:
    struct Pages {
        uint64_t generation = 0;
        bool known = false;                  // generation holds (pages may exist)
        std::map<std::string, size_t> holders;  // caller -> open page-cache handles
    };
    Mutex mutex_;  // a leaf
    std::unordered_map<fuse_ino_t, Pages> inodes_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::fs
