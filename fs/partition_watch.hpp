// Watches the folders of the partitions behind open aggregation views with
// inotify, so that a partition rewritten behind an unchanged aggregation
// file does not leave stale bytes in the kernel's page cache or the block
// cache. One watch per folder, at most kMaxFolders (and what the system's
// inotify limit allows); files in folders beyond that are stat'ed on each
// open instead (unwatched_changed). Callbacks run on the watch thread.
#pragma once

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/mutex.hpp"

namespace ncafs::fs {

class PartitionWatch {
public:
    static constexpr size_t kMaxFolders = 1024;

    // contents_changed: the inodes whose files' bytes (or identity) changed;
    // attributes_changed: a watched file's or folder's owner, mode or name changed.
    using ContentsChanged = std::function<void(const std::vector<fuse_ino_t>&)>;
    using AttributesChanged = std::function<void()>;
    PartitionWatch(ContentsChanged contents_changed, AttributesChanged attributes_changed);
    ~PartitionWatch();
    PartitionWatch(const PartitionWatch&) = delete;
    PartitionWatch& operator=(const PartitionWatch&) = delete;

    void start();
    void stop();

    // Records that inode ino serves bytes of files (a cheap no-op when it
    // already does with the same list); returns true when every file's folder
    // is watched.
    bool track(fuse_ino_t ino, const std::shared_ptr<const std::vector<std::string>>& files);
    // Forgets ino (the kernel dropped it); folders nothing else needs are unwatched.
    void untrack(fuse_ino_t ino);
    // For the files of ino in unwatched folders: true when one of them
    // changed (identity, size, mtime) since the previous call.
    bool unwatched_changed(fuse_ino_t ino);
    size_t watched_folders() const;

private:
    // File names of one folder -> the inodes they feed, as (hash of the
    // name, inode) pairs kept sorted: 16 bytes a partition file (a million
    // partitions in one folder), not a hash node, a string and a set. Two
    // names of one hash make an event on either refresh both's inodes: an
    // extra refresh, never a missed one.
    class FolderNames {
    public:
        void add(std::string_view name, fuse_ino_t ino) { entries_.emplace_back(hash(name), ino); }
        void settle();  // sorts and drops repeats; after the adds of one track()
        void remove_inode(fuse_ino_t ino);
        bool empty() const { return entries_.empty(); }
        std::vector<fuse_ino_t> inodes_of(std::string_view name) const;
        std::vector<fuse_ino_t> inodes() const;

    private:
        static uint64_t hash(std::string_view name) { return std::hash<std::string_view>{}(name); }
        std::vector<std::pair<uint64_t, fuse_ino_t>> entries_;
    };
    struct Folder {
        std::string path;
        FolderNames names;
    };
    struct Tracked {
        std::shared_ptr<const std::vector<std::string>> files;
        bool all_watched = true;
        std::vector<std::pair<std::string, std::string>> unwatched;  // path, stamp
    };
    int watch_folder(const std::string& folder) NCAFS_REQUIRES(mutex_);  // wd, or -1
    void drop_folder(int wd) NCAFS_REQUIRES(mutex_);
    void loop();
    void handle_events(const char* buffer, size_t length, std::set<fuse_ino_t>& changed, bool& attributes);

    ContentsChanged contents_changed_;
    AttributesChanged attributes_changed_;
    int inotify_fd_ = -1;
    int stop_fd_ = -1;
    std::thread thread_;
    mutable Mutex mutex_;  // lock order: before the log's (a full inotify table is logged under it)
    std::unordered_map<std::string, int> wd_of_folder_ NCAFS_GUARDED_BY(mutex_);
    std::unordered_map<int, Folder> folders_ NCAFS_GUARDED_BY(mutex_);
    std::unordered_map<fuse_ino_t, Tracked> tracked_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace ncafs::fs
