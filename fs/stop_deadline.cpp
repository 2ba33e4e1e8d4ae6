#include "fs/stop_deadline.hpp"

#include <unistd.h>

#include <cstdio>

#include "fs/log.hpp"

namespace ncafs::fs {

namespace {

// How often the end of the session is looked for: libfuse ends it from a
// signal handler or a worker thread, neither of which can wake us.
constexpr std::chrono::milliseconds kPoll{20};

}  // namespace

StopDeadline::StopDeadline(fuse_session* session, std::function<void()> unmount)
    : session_(session), unmount_(std::move(unmount)), thread_([this] { watch(); }) {}

StopDeadline::~StopDeadline() {
    {
        MutexLock lock(mutex_);
        done_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

bool StopDeadline::claim_unmount() {
    if (unmount_claimed_.exchange(true)) return false;
    unmount_();
    return true;
}

void StopDeadline::watch() {
    MutexLock lock(mutex_);
    while (!done_ && !fuse_session_exited(session_)) lock.wait_for(cv_, kPoll);
    const auto grace_ends = std::chrono::steady_clock::now() + kGrace;
    while (!done_ && lock.wait_until(cv_, grace_ends)) {
    }
    if (done_) return;
    lock.unlock();
    log_line(LogLevel::Warning, "stopping: requests still busy after " + std::to_string(kGrace.count()) +
                                    " ms are abandoned; exiting without waiting for them");
    if (!claim_unmount()) std::this_thread::sleep_for(kGrace / 3);  // the shutdown is unmounting: a moment more
    std::fflush(nullptr);
    ::_exit(0);
}

}  // namespace ncafs::fs
