// How many bytes beyond a read of a computed view to compute with it, per
// open file handle: none while reads jump about (a point read pays for what
// it asked, not for a MiB around it), growing by doubling while each read
// continues the one before (a sequential reader gets large computations,
// each with its fixed cost per call spread over many requests).
#pragma once

#include <cstdint>

#include "io/mutex.hpp"

namespace ncafs::fs {

class Readahead {
public:
    static constexpr uint64_t kFirst = uint64_t{128} << 10;  // after the first read that continues another
    static constexpr uint64_t kLargest = uint64_t{1} << 20;
    // Notes the read [offset, offset + length) and returns the bytes to
    // compute after it. A read starting within kLargest of the furthest end
    // read so far, before or after it, counts as continuing: the kernel's
    // readahead sends requests up to max_readahead (1 MiB) ahead of the
    // reader, several at once, served by several threads in any order. Any
    // other read resets the window to 0.
    uint64_t after(uint64_t offset, uint64_t length);

private:
    Mutex mutex_;
    bool reading_ NCAFS_GUARDED_BY(mutex_) = false;  // a read was noted
    uint64_t end_ NCAFS_GUARDED_BY(mutex_) = 0;      // the furthest end of the reads continuing each other
    uint64_t window_ NCAFS_GUARDED_BY(mutex_) = 0;
};

}  // namespace ncafs::fs
