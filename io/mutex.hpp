// A mutex the compiler checks. With clang (-Wthread-safety, an error in
// ncafs' builds), data declared NCAFS_GUARDED_BY(m) cannot be touched without
// m held, and a mutex declared NCAFS_ACQUIRED_AFTER(other) cannot be taken
// while holding one that must come after it (-Wthread-safety-beta): the lock
// order lives in the declarations, not in prose. std::mutex carries no such
// attributes, hence this thin wrapper.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "io/thread_safety.hpp"

namespace ncafs {

class NCAFS_CAPABILITY("mutex") Mutex {
public:
    constexpr Mutex() = default;
    Mutex(const Mutex&) = delete;
    Mutex& operator=(const Mutex&) = delete;

    void lock() NCAFS_ACQUIRE() { mutex_.lock(); }
    void unlock() NCAFS_RELEASE() { mutex_.unlock(); }
    // Tells the analysis the caller holds it, where it cannot see so (a
    // callback run under the lock through a std::function).
    void assert_held() const NCAFS_ASSERT_CAPABILITY(this) {}

private:
    friend class MutexLock;
    std::mutex mutex_;
};

// Holds a Mutex for its scope; may let it go and take it again, and waits on
// condition variables with it. Write waits as loops over guarded data
// (`while (!ready_) lock.wait(changed_);`): the analysis checks a loop, not
// a predicate lambda.
class NCAFS_SCOPED_CAPABILITY MutexLock {
public:
    explicit MutexLock(Mutex& mutex) NCAFS_ACQUIRE(mutex) : lock_(mutex.mutex_) {}
    ~MutexLock() NCAFS_RELEASE() {}
    MutexLock(const MutexLock&) = delete;
    MutexLock& operator=(const MutexLock&) = delete;

    void unlock() NCAFS_RELEASE() { lock_.unlock(); }
    void lock() NCAFS_ACQUIRE() { lock_.lock(); }

    void wait(std::condition_variable& changed) { changed.wait(lock_); }
    // False when the time ran out.
    template <class Clock, class Duration>
    bool wait_until(std::condition_variable& changed, const std::chrono::time_point<Clock, Duration>& deadline) {
        return changed.wait_until(lock_, deadline) == std::cv_status::no_timeout;
    }
    template <class Rep, class Period>
    bool wait_for(std::condition_variable& changed, const std::chrono::duration<Rep, Period>& time) {
        return changed.wait_for(lock_, time) == std::cv_status::no_timeout;
    }

private:
    std::unique_lock<std::mutex> lock_;
};

}  // namespace ncafs
