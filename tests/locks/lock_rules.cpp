// Compiled by ctest lock_rules_* with clang's thread-safety analysis, once
// as it is (it must compile) and once with each BREAK_* defined (each must
// not): proof that the annotations of io/mutex.hpp make the compiler refuse
// unguarded data and a lock order reversed.
#include "io/mutex.hpp"

namespace ncafs {

struct Cache {
    Mutex outer;
    Mutex inner NCAFS_ACQUIRED_AFTER(outer);
    int entries NCAFS_GUARDED_BY(inner) = 0;
    std::condition_variable changed;

    int count() {
        MutexLock lock(inner);
        return entries;
    }
    void both() {
        MutexLock first(outer);
        MutexLock second(inner);
        ++entries;
    }
    void wait_for_one() {
        MutexLock lock(inner);
        while (entries == 0) lock.wait(changed);
    }
#ifdef BREAK_UNGUARDED
    int unguarded() { return entries; }
#endif
#ifdef BREAK_ORDER
    void reversed() {
        MutexLock first(inner);
        MutexLock second(outer);
    }
#endif
#ifdef BREAK_RELEASED
    int after_unlock() {
        MutexLock lock(inner);
        lock.unlock();
        return entries;
    }
#endif
};

}  // namespace ncafs
