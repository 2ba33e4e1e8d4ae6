#include "codecs/vds/vds_buffer_pool.hpp"

#include <deque>

namespace ncafs::vds {

Mutex buffer_pool_mutex;

namespace {

struct Pool {
    std::deque<Buffer> spare NCAFS_GUARDED_BY(buffer_pool_mutex);  // oldest first
    size_t bytes NCAFS_GUARDED_BY(buffer_pool_mutex) = 0;
};

Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: objects cached elsewhere give buffers back at exit
    return *p;
}

}  // namespace

Buffer take_buffer(size_t n) {
    {
        Pool& p = pool();
        MutexLock lock(buffer_pool_mutex);
        auto best = p.spare.end();
        for (auto it = p.spare.begin(); it != p.spare.end(); ++it)
            if (it->size >= n && it->size / 2 <= n && (best == p.spare.end() || it->size < best->size)) best = it;
        if (best != p.spare.end()) {
            Buffer b = std::move(*best);
            p.spare.erase(best);
            p.bytes -= b.size;
            return b;
        }
    }
    return {std::unique_ptr<uint8_t[]>(new uint8_t[n]), n};
}

void give_buffer(Buffer b) {
    if (!b.bytes || b.size > kSpareBytes) return;
    std::deque<Buffer> dropped;  // freed after the lock
    Pool& p = pool();
    MutexLock lock(buffer_pool_mutex);
    p.bytes += b.size;
    p.spare.push_back(std::move(b));
    while (p.bytes > kSpareBytes) {
        p.bytes -= p.spare.front().size;
        dropped.push_back(std::move(p.spare.front()));
        p.spare.pop_front();
    }
}

}  // namespace ncafs::vds
