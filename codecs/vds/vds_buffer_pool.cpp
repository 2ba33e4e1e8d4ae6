#include "codecs/vds/vds_buffer_pool.hpp"

#include <deque>
#include <mutex>

namespace ncafs::vds {
namespace {

struct Pool {
    std::mutex mutex;
    std::deque<Buffer> spare;  // oldest first
    size_t bytes = 0;
};

Pool& pool() {
    static Pool* p = new Pool;  // never destroyed: objects cached elsewhere give buffers back at exit
    return *p;
}

}  // namespace

Buffer take_buffer(size_t n) {
    {
        Pool& p = pool();
        std::lock_guard lock(p.mutex);
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
    std::lock_guard lock(p.mutex);
    p.bytes += b.size;
    p.spare.push_back(std::move(b));
    while (p.bytes > kSpareBytes) {
        p.bytes -= p.spare.front().size;
        dropped.push_back(std::move(p.spare.front()));
        p.spare.pop_front();
    }
}

}  // namespace ncafs::vds
