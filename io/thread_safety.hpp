// Clang's thread-safety analysis attributes (empty for other compilers):
// a mutex declared NCAFS_CAPABILITY (io/mutex.hpp), data NCAFS_GUARDED_BY it
// and functions that need it held NCAFS_REQUIRES(it) make an access without
// the lock a compile error, and NCAFS_ACQUIRED_AFTER a lock taken out of
// order (-Werror=thread-safety, -Werror=thread-safety-beta: CMakeLists.txt).
#pragma once

#if defined(__clang__)
#define NCAFS_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define NCAFS_THREAD_ATTRIBUTE(x)
#endif

#define NCAFS_CAPABILITY(x) NCAFS_THREAD_ATTRIBUTE(capability(x))
#define NCAFS_SCOPED_CAPABILITY NCAFS_THREAD_ATTRIBUTE(scoped_lockable)
#define NCAFS_GUARDED_BY(x) NCAFS_THREAD_ATTRIBUTE(guarded_by(x))
#define NCAFS_PT_GUARDED_BY(x) NCAFS_THREAD_ATTRIBUTE(pt_guarded_by(x))
#define NCAFS_ACQUIRED_AFTER(...) NCAFS_THREAD_ATTRIBUTE(acquired_after(__VA_ARGS__))
#define NCAFS_ACQUIRED_BEFORE(...) NCAFS_THREAD_ATTRIBUTE(acquired_before(__VA_ARGS__))
#define NCAFS_EXCLUDES(...) NCAFS_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#define NCAFS_REQUIRES(...) NCAFS_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define NCAFS_ACQUIRE(...) NCAFS_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define NCAFS_RELEASE(...) NCAFS_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
#define NCAFS_ASSERT_CAPABILITY(x) NCAFS_THREAD_ATTRIBUTE(assert_capability(x))
#define NCAFS_NO_THREAD_SAFETY_ANALYSIS NCAFS_THREAD_ATTRIBUTE(no_thread_safety_analysis)
