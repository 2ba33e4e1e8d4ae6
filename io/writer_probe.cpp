#include "io/writer_probe.hpp"

#include <fcntl.h>
#include <signal.h>

#include <cerrno>
#include <unordered_map>

#include "io/mutex.hpp"

namespace ncafs {

namespace {
// Breaking a lease signals its holder with SIGIO, whose default action ends
// the process. Ours need no notice (a probe lasts two system calls, a held
// lease is checked by its holder): ignore the signal unless the program
// handles it itself.
void ignore_lease_breaks() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction current {};
        if (::sigaction(SIGIO, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
            struct sigaction ignore {};
            ignore.sa_handler = SIG_IGN;
            ::sigemptyset(&ignore.sa_mask);
            ::sigaction(SIGIO, &ignore, nullptr);
        }
    });
}

// Takers per descriptor: the lease is the open file description's.
struct Takers {
    Mutex mutex;  // lock order: a leaf
    std::unordered_map<int, int> count NCAFS_GUARDED_BY(mutex);
};
Takers& takers() {
    static Takers* all = new Takers;  // never destroyed: usable from any thread at exit
    return *all;
}
}  // namespace

bool take_read_lease(int fd) {
    ignore_lease_breaks();
    Takers& all = takers();
    MutexLock lock(all.mutex);
    int& count = all.count[fd];
    if (count == 0 && ::fcntl(fd, F_SETLEASE, F_RDLCK) != 0) {
        const int e = errno;
        all.count.erase(fd);
        errno = e;
        return false;
    }
    ++count;
    return true;
}

void drop_read_lease(int fd) {
    Takers& all = takers();
    MutexLock lock(all.mutex);
    auto it = all.count.find(fd);
    if (it == all.count.end() || --it->second > 0) return;
    all.count.erase(it);
    ::fcntl(fd, F_SETLEASE, F_UNLCK);
}

Writers writers_of(int fd) {
    if (take_read_lease(fd)) {
        drop_read_lease(fd);
        return Writers::None;
    }
    return errno == EAGAIN ? Writers::Some : Writers::Unknown;
}

}  // namespace ncafs
