#include "io/read_lease.hpp"

#include <fcntl.h>

#include "io/writer_probe.hpp"

namespace ncafs {

ReadLease::ReadLease(std::shared_ptr<const OpenFile> file) : file_(std::move(file)) {
    held_ = file_ && file_->fd() >= 0 && !file_->immutable() && take_read_lease(file_->fd());
}

ReadLease& ReadLease::operator=(ReadLease&& other) noexcept {
    if (this != &other) {
        release();
        file_ = std::move(other.file_);
        held_ = other.held_;
        other.held_ = false;
    }
    return *this;
}

ReadLease::~ReadLease() { release(); }

void ReadLease::release() {
    if (held_) drop_read_lease(file_->fd());
    held_ = false;
}

bool ReadLease::unbroken() const { return held_ && ::fcntl(file_->fd(), F_GETLEASE) == F_RDLCK; }

}  // namespace ncafs
