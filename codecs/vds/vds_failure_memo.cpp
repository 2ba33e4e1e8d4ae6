#include "codecs/vds/vds_failure_memo.hpp"


#include "io/lru_cache.hpp"
#include "io/mutex.hpp"

namespace ncafs::vds {
namespace {

struct IdentityHash {
    size_t operator()(const FileIdentity& f) const {
        size_t h = 0;
        for (uint64_t part : {uint64_t(f.device), uint64_t(f.inode), uint64_t(f.mtime_ns), f.size, uint64_t(f.ctime_ns)})
            h ^= std::hash<uint64_t>{}(part) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        return h;
    }
};

struct Memo {
    Mutex mutex;  // lock order: a leaf
    LruCache<FileIdentity, FormatError, IdentityHash> failures NCAFS_GUARDED_BY(mutex){kDefaultFailureMemoEntries};
};

Memo& memo() {
    static Memo m;
    return m;
}

}  // namespace

std::optional<FormatError> remembered_failure(const FileIdentity& file) {
    MutexLock lock(memo().mutex);
    return memo().failures.get(file);
}

void remember_failure(const FileIdentity& file, const FormatError& error) {
    MutexLock lock(memo().mutex);
    if (memo().failures.capacity() > 0) memo().failures.put(file, error);
}

void set_failure_memo_entries(size_t entries) {
    MutexLock lock(memo().mutex);
    memo().failures.set_capacity(entries);
}

}  // namespace ncafs::vds
