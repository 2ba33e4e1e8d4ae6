// The FUSE low-level operations of a mount: a Filesystem owns the catalog and
// the inode table; every operation catches every exception at the boundary
// (EIO plus one log line), so that no input can bring the daemon down.
#pragma once

#include <fuse_lowlevel.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "fs/catalog.hpp"
#include "fs/inode_table.hpp"
#include "fs/read_path.hpp"

namespace ncafs::fs {

class Filesystem {
public:
    explicit Filesystem(Catalog& catalog);
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
    BlockCache& block_cache() { return block_cache_; }
    InodeTable& inodes() { return inodes_; }
    // Queues a kernel cache invalidation (page cache and attributes) of ino.
    void invalidate(fuse_ino_t ino);

private:
    void invalidation_loop();

    Catalog& catalog_;
    InodeTable inodes_;
    BlockCache block_cache_{32};  // 32 MiB of computed view bytes
    fuse_session* session_ = nullptr;
    std::mutex queue_mutex_;
    std::condition_variable queue_cv_;
    std::deque<fuse_ino_t> queue_;
    bool stopping_ = false;
    std::thread worker_;
};

}  // namespace ncafs::fs
