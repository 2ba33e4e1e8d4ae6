// A read-only file descriptor with the identity it had when opened, so that
// caches can notice a file that changed underneath (device, inode, size,
// mtime, ctime: a rewrite that restores the old mtime still moves ctime).
// Reads check the identity again after reading: bytes from two versions of a
// file give an error, never a mixture. A remote OpenFile (an object on an
// HTTP server or in an S3 store) has no fd: its reads go to the RemoteBytes,
// which answers from the version seen at open or throws.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/remote_bytes.hpp"
#include "io/mutex.hpp"

namespace ncafs {

struct FileIdentity {
    dev_t device = 0;
    ino_t inode = 0;
    int64_t mtime_ns = 0;
    uint64_t size = 0;
    int64_t ctime_ns = 0;
    bool operator==(const FileIdentity&) const = default;
};

FileIdentity identity_from_stat(const struct stat& st);
// True when mtime or ctime lies within the last second (or ahead).
// Timestamps are coarse: a write in progress may not show in them yet, so
// bytes of such a file are read twice (pread_exact) and never spliced.
bool changed_within_last_second(const struct stat& st);
// The "last second" above (default one second). Tests that rewrite a file on
// purpose and parse it at once, thousands of times (truncation at every
// byte), set it to zero so that each read is not doubled. End-to-end tests
// set the test-only NCAFS_TEST_SETTLE_MS (milliseconds, read once by the
// daemon or command) instead of sleeping a second after writing their inputs.
void set_settling_window(std::chrono::nanoseconds window);
// stat(2) of a path; nullopt when it does not exist or cannot be stat'ed.
std::optional<FileIdentity> identity_of(const std::string& path);
// The identity of a remote object: a device no local file system has, the
// inode a hash of the URL, mtime and ctime a hash of the version, its size.
// A replaced object (new version) gets a new identity, so a new cache key.
inline constexpr dev_t kRemoteDevice = static_cast<dev_t>(-2);
FileIdentity identity_of_remote(const RemoteBytes& object);

class ConfinedRoots;

class OpenFile {
public:
    // Opens read-only (open_regular_file: O_NONBLOCK, regular files only,
    // confined to `within` when given); throws SourceError naming the path
    // and the reason.
    static std::shared_ptr<const OpenFile> open(const std::string& path, const ConfinedRoots* within = nullptr);
    // Takes ownership of fd, already open on a regular file found as path.
    static std::shared_ptr<const OpenFile> adopt(int fd, const std::string& path);
    // adopt() with the fstat the caller already made of fd (open_regular_file's).
    static std::shared_ptr<const OpenFile> adopt(int fd, const std::string& path, const struct stat& st);
    // Takes ownership of fd (open_for_reading's, not yet fstat'ed) and
    // reads its first min(size, head_limit) bytes in one pread BEFORE the
    // one fstat: that fstat refuses what is not a regular file (nothing read
    // is used then), gives the identity, and, the read lying before it, is
    // also the check after the read (a file changed within the last second
    // is read again and compared, as pread_exact does). A fresh small file
    // thus costs open, pread, fstat. The bytes wait for take_head().
    // Throws SourceError naming the path.
    static std::shared_ptr<const OpenFile> open_with_head(int fd, const std::string& path, size_t head_limit);
    // The first bytes open_with_head read (moved out: once); empty otherwise.
    std::vector<uint8_t> take_head() const;
    // Takes ownership of fd, a private copy that nothing writes once it is
    // handed over (a remote object's local copy in the disk cache), named
    // by `identity` (the object's, identity_of_remote): its reads check
    // nothing (its inode's times move when the cache touches or unlinks it).
    static std::shared_ptr<const OpenFile> adopt_immutable(int fd, const std::string& path, const FileIdentity& identity);
    // An object read by byte range: fd() is -1, path() the URL.
    static std::shared_ptr<const OpenFile> remote(std::shared_ptr<const RemoteBytes> object);
    // For the factories above only (Private is theirs): one allocation with
    // its shared_ptr's count (make_shared).
    struct Private {
        explicit Private() = default;
    };
    OpenFile(Private, int fd, std::string path, FileIdentity identity)
        : fd_(fd), path_(std::move(path)), identity_(identity) {}
    ~OpenFile();
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;

    // -1 for a remote file (nothing to splice, stat or open by name).
    int fd() const { return fd_; }
    bool is_remote() const { return remote_ != nullptr; }
    // A private copy nothing writes (adopt_immutable).
    bool immutable() const { return immutable_; }
    // The object behind a remote file (null for a local one).
    const RemoteBytes* remote_bytes() const { return remote_.get(); }
    const std::string& path() const { return path_; }
    const FileIdentity& identity() const { return identity_; }
    uint64_t size() const { return identity_.size; }

    // Reads exactly n bytes at offset, then checks the identity again (and
    // reads again and compares when the file changed within the last
    // second); throws SourceError on I/O error, when the file is shorter
    // than expected or when it changed while (or since) being opened.
    // A file not vouched for is read as read_checked says.
    void pread_exact(void* buffer, size_t n, uint64_t offset) const;
    // True when the identity vouches for every byte read since the open: a
    // write after it moves ctime past the identity's. Timestamps are coarse
    // (a tick, on many file systems) so a file changed within the last
    // second when it was opened is not vouched for: a write in the same tick
    // as its ctime leaves the identity as it was, and the layout computed at
    // the open may describe another version than the bytes read later. It
    // becomes vouched for at a read that finds it settled and unchanged,
    // the bytes its layout came from the same (note_layout_prefix).
    bool vouched() const { return vouched_.load(std::memory_order_relaxed); }
    // The file's first bytes as the layout of its data was computed from
    // them (a classic header): while the file is not vouched for, every
    // checked read compares them again first. Kept once; ignored when vouched.
    void note_layout_prefix(std::span<const uint8_t> bytes) const;
    // read(out) (reads by pread_unchecked into its argument, n bytes in
    // all), then check_after_read. A file not vouched for is read under a
    // read lease (read_lease.hpp: no writer meanwhile), taken after waiting,
    // bounded, for writers to close it, with its layout prefix compared
    // first; without a lease (not the owner, no CAP_LEASE, no leases on the
    // file system) the prefix is compared before and after and the bytes
    // read twice. Throws SourceError when a check fails.
    template <class Read>
    void read_checked(void* out, size_t n, Read&& read) const {
        if (vouched()) {
            read(out);
            check_after_read(out, n, read);
        } else {
            read_unvouched(out, n, read);
        }
    }
    // Keeps the whole file's bytes as just read and checked by the opener
    // (a small file: the header read took it all): the next pread_exact
    // wholly inside them is answered from memory, once, with no system
    // call, so that a fresh partition costs one open and one read. Later
    // reads go to the fd and its checks (a change in place is seen there).
    void keep_first_read(std::vector<uint8_t> bytes) const;
    // The whole file's bytes kept by keep_first_read, moved out (once; the
    // same bytes pread_exact would serve); empty when none are kept.
    // Copied instead while a read along holds a share (ShareKeptFile).
    std::vector<uint8_t> take_kept_file() const;
    // While alive, the bytes keep_first_read kept (if still kept) serve one
    // read more: a read along with the opener's, in its open (the small
    // fragment another variable has in the same file,
    // aggregation/read/sibling_sources.hpp), takes the bytes the opener
    // read and checked, and the opener's own read still finds them; one
    // open then costs one read. A share not used by its end is withdrawn.
    class ShareKeptFile {
    public:
        explicit ShareKeptFile(const OpenFile& file) : file_(file), shared_(file.add_kept_file_serve()) {}
        ~ShareKeptFile() {
            if (shared_) file_.withdraw_kept_file_serve();
        }
        ShareKeptFile(const ShareKeptFile&) = delete;
        ShareKeptFile& operator=(const ShareKeptFile&) = delete;

    private:
        const OpenFile& file_;
        bool shared_;
    };
    // pread_exact without the checks: for a loop of reads followed by one
    // check_after_read().
    void pread_unchecked(void* buffer, size_t n, uint64_t offset) const;
    // The check after reading n bytes into `first`: check_unchanged(), and
    // when the file changed within the last second (a write may still be
    // under way and may have torn them) a wait, bounded, until no process
    // holds the file open for writing (writer_probe.hpp), then read_again
    // into a second buffer: SourceError when the two differ.
    // A template so that a settled file (every read but those of the last
    // second) costs the fstat alone, no std::function.
    template <class ReadAgain>
    void check_after_read(const void* first, size_t n, ReadAgain&& read_again) const {
        if (needs_second_read(n)) confirm_by_second_read(first, n, read_again);
    }
    // Throws SourceError when fstat of the fd no longer gives the identity
    // (a remote file checks its version on every read instead, and an
    // immutable copy cannot change: no-op).
    void check_unchanged() const;
    // True once a check above found the file changed: holders of this open
    // file (resolved partitions) open its path again rather than reuse it.
    bool seen_changed() const { return seen_changed_.load(std::memory_order_relaxed); }
    // The "/proc/self/fd/N" name of the fd: for libraries that open by name
    // (netcdf-c) and must reach this very file, not whatever the path names now.
    // Throws SourceError for a remote file (open its local copy instead).
    std::string proc_path() const;

private:
    struct stat check_unchanged_stat() const;
    // check_unchanged(); true when the file changed within the last second
    // (a local file, n > 0): check_after_read then reads a second time.
    bool needs_second_read(size_t n) const;
    void confirm_by_second_read(const void* first, size_t n, const std::function<void(void*)>& read_again) const;
    void wait_for_writers() const;
    void read_unvouched(void* out, size_t n, const std::function<void(void*)>& read) const;
    // fd_ with a read lease taken for one read, or -1 when none can be had.
    int lease_for_read() const;
    void check_layout_prefix() const;
    int fd_;
    std::string path_;
    FileIdentity identity_;
    // The once-served first read (keep_first_read).
    bool take_first_read(void* buffer, size_t n, uint64_t offset) const;
    // ShareKeptFile's: one serve more of the kept bytes (false: none kept);
    // the serve taken back unless used (more than one left).
    bool add_kept_file_serve() const;
    void withdraw_kept_file_serve() const;
    bool immutable_ = false;  // adopt_immutable
    mutable std::atomic<bool> seen_changed_{false};
    mutable std::atomic<bool> vouched_{true};  // set by the factories from the open's fstat
    mutable std::shared_ptr<const std::vector<uint8_t>> layout_prefix_ NCAFS_GUARDED_BY(first_read_mutex_);
    mutable std::atomic<uint32_t> first_read_serves_{0};  // reads first_read_ still serves
    mutable Mutex first_read_mutex_;
    mutable std::vector<uint8_t> first_read_ NCAFS_GUARDED_BY(first_read_mutex_);
    mutable std::vector<uint8_t> head_ NCAFS_GUARDED_BY(first_read_mutex_);  // open_with_head's bytes, until take_head
    std::shared_ptr<const RemoteBytes> remote_;
};

}  // namespace ncafs
