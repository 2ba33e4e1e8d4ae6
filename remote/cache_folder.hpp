// The folders of the disk cache (cache_dir) as descriptors that only this
// process's user may write into. The root is created 0700 without trusting
// its name twice (mkdir, then open O_DIRECTORY|O_NOFOLLOW and fstat the fd:
// the parent may be a world-writable /var/tmp) and refused when another user
// owns it or may write into it. Every file is then reached relative to a
// folder's fd, never by a path: opened O_NOFOLLOW|O_NONBLOCK (a planted FIFO
// cannot block), kept only when it is a regular file of ours (mode 0600, one
// link); anything else found under a cache name is unlinked (unlinkat never
// follows a link) with one log line. New files are created O_EXCL 0600 in
// tmp/ and renamed into place.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <string>
#include <vector>

#include "io/confined_open.hpp"

namespace ncafs::remote {

using CacheLog = std::function<void(const std::string&)>;

// A file being written in tmp/ (O_EXCL, 0600), then published by rename.
struct TempFile {
    UniqueFd fd;
    std::string name;  // in tmp/
};

// A directory entry as lstat sees it (fstatat AT_SYMLINK_NOFOLLOW).
struct FolderEntry {
    std::string name;
    struct stat st {};
};

class CacheFolder {
public:
    // Opens (creating it 0700 when missing) DIR and its sub-folders `subs`.
    // Throws UsageError("cache_dir DIR: REASON") when DIR or a sub-folder is
    // a symbolic link or no folder, is owned by another user, or DIR is
    // writable by its group or others. A folder of ours readable by others
    // is made 0700.
    CacheFolder(std::string dir, const std::vector<std::string>& subs, CacheLog log);

    const std::string& dir() const { return dir_; }
    int root() const { return root_.get(); }
    // The fd of sub-folder `subs[i]` given to the constructor.
    int sub(size_t i) const { return subs_[i].get(); }
    std::string path_of(int folder, const std::string& name) const;

    // A regular file of ours (0600, one link) opened O_RDONLY|O_NOFOLLOW|
    // O_NONBLOCK, with its fstat; an empty fd when missing or when something
    // else was there (then unlinked, logged).
    UniqueFd open_file(int folder, const std::string& name, struct stat& st) const;
    // As open_file, O_RDWR and created (0600) when missing: DIR/lock.
    UniqueFd open_or_create(int folder, const std::string& name) const;
    // A new file in tmp/ (the sub-folder named "tmp"); throws SourceError.
    TempFile create_temp() const;
    // Renames temp to folder/name (replacing it); false, temp removed, on failure.
    bool publish(TempFile& temp, int folder, const std::string& name) const;
    // Renames temp to folder/name unless that exists (false then, temp removed).
    bool publish_new(TempFile& temp, int folder, const std::string& name) const;
    void discard(TempFile& temp) const;
    void remove(int folder, const std::string& name) const;
    std::vector<FolderEntry> list(int folder) const;

private:
    bool is_ours(const struct stat& st) const;
    void refuse_found(int folder, const std::string& name, const std::string& what) const;

    std::string dir_;
    CacheLog log_;
    UniqueFd root_;
    std::vector<UniqueFd> subs_;
    std::vector<std::string> sub_names_;
    int tmp_ = -1;
};

}  // namespace ncafs::remote
