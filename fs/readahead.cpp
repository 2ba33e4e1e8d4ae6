#include "fs/readahead.hpp"

#include <algorithm>

namespace ncafs::fs {

uint64_t Readahead::after(uint64_t offset, uint64_t length) {
    MutexLock lock(mutex_);
    const bool continues = reading_ && offset + kLargest >= end_ && offset <= end_ + kLargest;
    window_ = continues ? std::clamp(window_ * 2, kFirst, kLargest) : 0;
    reading_ = true;
    end_ = continues ? std::max(end_, offset + length) : offset + length;
    return window_;
}

}  // namespace ncafs::fs
