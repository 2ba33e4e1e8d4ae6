// Unit tests of the partition folder watch (fs/partition_watch): a change to
// a tracked partition reports the inodes that draw on it, folders are watched
// while a partition needs them, and files it cannot watch are compared when
// opened. The tests wait for events with generous timeouts only.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>

#include "fs/partition_watch.hpp"
#include "tests/fs/temp_files.hpp"

namespace stdfs = std::filesystem;
using namespace ncafs::fs;
using ncafs::test::files;
using ncafs::test::TempDir;

namespace {

struct Recorder {
    std::mutex mutex;
    std::condition_variable cv;
    std::set<fuse_ino_t> changed;
    int attributes = 0;
    bool wait_for(fuse_ino_t ino) {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, std::chrono::seconds(30), [&] { return changed.count(ino) > 0; });
    }
    bool wait_for_attributes() {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, std::chrono::seconds(30), [&] { return attributes > 0; });
    }
};

}  // namespace

TEST(PartitionWatch, ReportsTheInodesOfAChangedPartition) {
    TempDir dir;
    std::string p1 = dir.write("p1.nc", "one"), p2 = dir.write("p2.nc", "two");
    Recorder r;
    PartitionWatch watch(
        [&](const std::vector<fuse_ino_t>& inodes) {
            std::lock_guard lock(r.mutex);
            r.changed.insert(inodes.begin(), inodes.end());
            r.cv.notify_all();
        },
        [&] {
            std::lock_guard lock(r.mutex);
            ++r.attributes;
            r.cv.notify_all();
        });
    watch.start();
    auto list = files({p1});
    EXPECT_TRUE(watch.track(5, list));
    EXPECT_TRUE(watch.track(6, files({p2})));
    EXPECT_EQ(watch.watched_folders(), 1u);
    dir.write("unrelated.txt", "z");
    dir.write("p1.nc", "ONE");
    ASSERT_TRUE(r.wait_for(5));
    {
        std::lock_guard lock(r.mutex);
        EXPECT_EQ(r.changed.count(6), 0u);  // p2 did not change
    }
    stdfs::permissions(p2, stdfs::perms(0600));
    ASSERT_TRUE(r.wait_for(6));
    EXPECT_TRUE(r.wait_for_attributes());
    watch.untrack(5);
    EXPECT_EQ(watch.watched_folders(), 1u);  // p2 still needs it
    watch.untrack(6);
    EXPECT_EQ(watch.watched_folders(), 0u);
    EXPECT_TRUE(watch.track(5, list));  // watched afresh
    EXPECT_EQ(watch.watched_folders(), 1u);
    watch.stop();
}

TEST(PartitionWatch, UnwatchedFilesAreComparedOnOpen) {
    TempDir dir;
    std::string p = dir.write("p.nc", "one");
    PartitionWatch watch(nullptr, nullptr);  // not started: nothing can be watched
    EXPECT_FALSE(watch.track(9, files({p})));
    EXPECT_FALSE(watch.unwatched_changed(9));
    dir.write("p.nc", "one plus");
    EXPECT_TRUE(watch.unwatched_changed(9));
    EXPECT_FALSE(watch.unwatched_changed(9));
}
