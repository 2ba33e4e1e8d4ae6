// A read-only file descriptor with the identity it had when opened, so that
// caches can notice a file that changed underneath (device, inode, mtime, size).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ncafs {

struct FileIdentity {
    dev_t device = 0;
    ino_t inode = 0;
    int64_t mtime_ns = 0;
    uint64_t size = 0;
    bool operator==(const FileIdentity&) const = default;
};

// stat(2) of a path; nullopt when it does not exist or cannot be stat'ed.
std::optional<FileIdentity> identity_of(const std::string& path);

class OpenFile {
public:
    // Opens read-only; throws SourceError naming the path and errno text.
    static std::shared_ptr<const OpenFile> open(const std::string& path);
    ~OpenFile();
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;

    int fd() const { return fd_; }
    const std::string& path() const { return path_; }
    const FileIdentity& identity() const { return identity_; }
    uint64_t size() const { return identity_.size; }

    // Reads exactly n bytes at offset; throws SourceError on I/O error or
    // when the file is shorter than expected (it changed underneath).
    void pread_exact(void* buffer, size_t n, uint64_t offset) const;
    // True while the path still names the same, unchanged file.
    bool unchanged() const;

private:
    OpenFile(int fd, std::string path, FileIdentity identity)
        : fd_(fd), path_(std::move(path)), identity_(identity) {}
    int fd_;
    std::string path_;
    FileIdentity identity_;
};

}  // namespace ncafs
