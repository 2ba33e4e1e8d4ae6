// The FUSE low-level operations of a mount: a Filesystem owns the catalog and
// the inode table; every operation catches every exception at the boundary
// (EIO plus one log line), so that no input can bring the daemon down.
#pragma once

#include <fuse_lowlevel.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "fs/caller_access.hpp"
#include "fs/catalog.hpp"
#include "fs/inode_table.hpp"
#include "fs/page_sharing.hpp"
#include "fs/partition_watch.hpp"
#include "fs/view_block_cache.hpp"
#include "fs/remote_workers.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

class Filesystem {
public:
    // check_callers (allow_other): files are opened only for callers who
    // could read everything they draw on themselves (CallerAccess).
    explicit Filesystem(Catalog& catalog, bool check_callers = false);
    ~Filesystem();
    Filesystem(const Filesystem&) = delete;
    Filesystem& operator=(const Filesystem&) = delete;

    // The table handed to fuse_session_new (userdata: this Filesystem).
    static const fuse_lowlevel_ops& operations();

    // Starts/stops the thread that sends cache invalidations to the kernel
    // (sent outside request handlers, so they never wait on the request that caused them).
    void start(fuse_session* session);
    void stop();

    Catalog& catalog() { return catalog_; }
    ViewBlockCache& block_cache() { return block_cache_; }
    InodeTable& inodes() { return inodes_; }
    RemoteWorkers& remote_workers() { return remote_workers_; }
    // The kernel dropped ino: its partitions need no watching for it.
    void forgotten(fuse_ino_t ino) {
        watch_.untrack(ino);
        pages_.forget(ino);
    }
    // Queues a kernel cache invalidation (page cache and attributes) of ino.
    void invalidate(fuse_ino_t ino);
    // What an open was judged on (allow_other): reads judge it again after
    // a watched file's owner, mode or name changed under the open file.
    struct AccessGrant {
        Caller caller;
        std::string subject;
        struct stat subject_st {};
        std::shared_ptr<const std::vector<std::string>> files;
        bool watched = false;
        std::atomic<uint64_t> generation{0};  // of CallerAccess when last judged
        std::atomic<uint64_t> pins_generation{0};  // of FilePins when last judged: the view's epoch
    };
    // 0 when the caller of req may open entry (grant: what it was judged on;
    // null without allow_other), else the errno to reply (EACCES, one log
    // line naming the user and the file).
    int caller_may_open(fuse_req_t req, fuse_ino_t ino, const Entry& entry, std::unique_ptr<AccessGrant>& grant);
    // 0 while the grant holds, else EACCES (logged).
    int grant_holds(AccessGrant& grant);
    // The generation of the caller checks and pins (CallerAccess::generation); 0 without allow_other.
    uint64_t access_generation() const { return access_ ? access_->generation() : 0; }
    PageSharing& pages() { return pages_; }
    // Watches the partitions of an aggregation view served as ino; true when
    // one in an unwatched folder changed since the last open (the caches of
    // ino were dropped then).
    bool refresh_partitions(fuse_ino_t ino, const Entry& entry);

private:
    void invalidation_loop();
    void partitions_changed(const std::vector<fuse_ino_t>& inodes);
    int judge(AccessGrant& grant, const char* what);

    Catalog& catalog_;
    InodeTable inodes_;
    ViewBlockCache block_cache_{uint64_t{32} << 20};  // of computed view bytes
    fuse_session* session_ = nullptr;
    Mutex queue_mutex_;  // lock order: a leaf (the kernel is notified outside it)
    std::condition_variable queue_cv_;
    std::deque<fuse_ino_t> queue_ NCAFS_GUARDED_BY(queue_mutex_);
    bool stopping_ NCAFS_GUARDED_BY(queue_mutex_) = false;
    std::thread worker_;
    std::unique_ptr<CallerAccess> access_;  // only with check_callers
    PageSharing pages_;
    PartitionWatch watch_;
    RemoteWorkers remote_workers_;  // last: stopped (in stop()) before the rest goes
};

}  // namespace ncafs::fs
