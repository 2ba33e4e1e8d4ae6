// Stopping is always possible: once the FUSE session has ended (SIGTERM,
// SIGINT, the kernel's unmount), the orderly shutdown (libfuse joining its
// workers, the pools joining theirs) gets kGrace to finish; a thread still
// busy then (a parse of a hostile file, a decode) is abandoned, not awaited:
// the mount is taken away and the process exits with status 0.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <fuse_lowlevel.h>

#include "io/mutex.hpp"

namespace ncafs::fs {

class StopDeadline {
public:
    static constexpr std::chrono::milliseconds kGrace{1000};

    // unmount: takes the mount away (called at most once, by whichever of
    // the shutdown and the deadline comes first: claim_unmount).
    StopDeadline(fuse_session* session, std::function<void()> unmount);
    // The orderly shutdown is complete: the deadline is off.
    ~StopDeadline();
    StopDeadline(const StopDeadline&) = delete;
    StopDeadline& operator=(const StopDeadline&) = delete;

    // Unmounts unless the other side already did; true when this call did.
    bool claim_unmount();

private:
    void watch();
    fuse_session* session_;
    std::function<void()> unmount_;
    std::atomic<bool> unmount_claimed_{false};
    Mutex mutex_;  // a leaf
    std::condition_variable cv_;
    bool done_ NCAFS_GUARDED_BY(mutex_) = false;
    std::thread thread_;
};

}  // namespace ncafs::fs
