// Buffers of the .vds writer (batch samples, decimation scratch, chunk
// objects), kept when released for the next batch: a fresh buffer costs a
// page fault per 4 KiB (the kernel zeroing it), which was a fifth of the
// time of reading a .vds view. Buffers are not zeroed: every byte is
// written before it is read. At most kSpareBytes are kept, process-wide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "io/mutex.hpp"

namespace ncafs::vds {

constexpr size_t kSpareBytes = size_t{16} << 20;

struct Buffer {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;
};

// Guards the kept buffers; lock order: a leaf.
extern Mutex buffer_pool_mutex;

// A buffer of at least n bytes (a kept one of n..2n bytes, else a new one).
Buffer take_buffer(size_t n) NCAFS_EXCLUDES(buffer_pool_mutex);
// Keeps b for a later take_buffer (dropping the oldest kept past kSpareBytes).
void give_buffer(Buffer b) NCAFS_EXCLUDES(buffer_pool_mutex);

// A buffer for the length of a scope.
class PooledBuffer {
public:
    explicit PooledBuffer(size_t n) : b_(take_buffer(n)) {}
    ~PooledBuffer() { give_buffer(std::move(b_)); }
    PooledBuffer(const PooledBuffer&) = delete;
    PooledBuffer& operator=(const PooledBuffer&) = delete;
    uint8_t* data() const { return b_.bytes.get(); }

private:
    Buffer b_;
};

}  // namespace ncafs::vds
