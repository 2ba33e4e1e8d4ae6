// A read lease (fcntl F_SETLEASE F_RDLCK) held on an open file while bytes
// are read from it: the kernel grants one only while no descriptor of the
// file is open for writing, and while it is held an open for writing or a
// truncate by any process waits until it is dropped (or the kernel's
// lease-break-time, /proc/sys/fs/lease-break-time, passes). So the bytes
// read under an unbroken lease are one version of the file, whatever its
// timestamps say: what a check before a read cannot promise for a splice,
// which the kernel performs after every check. Leases are per open file
// description: threads sharing one descriptor share the lease, which is
// dropped when the last of them is done. Needs the file's owner or
// CAP_LEASE and a file system with leases; otherwise held() is false.
#pragma once

#include <memory>

#include "io/open_file.hpp"

namespace ncafs {

class ReadLease {
public:
    ReadLease() = default;
    // Takes (or joins) the lease on file's descriptor; a remote or immutable
    // file has nothing to lease (held() false).
    explicit ReadLease(std::shared_ptr<const OpenFile> file);
    ReadLease(ReadLease&& other) noexcept : file_(std::move(other.file_)), held_(other.held_) { other.held_ = false; }
    ReadLease& operator=(ReadLease&& other) noexcept;
    ReadLease(const ReadLease&) = delete;
    ReadLease& operator=(const ReadLease&) = delete;
    ~ReadLease();

    bool held() const { return held_; }
    const OpenFile* file() const { return file_.get(); }
    // True while no process has asked to open the file for writing since the
    // lease was taken (the kernel is not breaking it).
    bool unbroken() const;

private:
    void release();
    std::shared_ptr<const OpenFile> file_;
    bool held_ = false;
};

}  // namespace ncafs
