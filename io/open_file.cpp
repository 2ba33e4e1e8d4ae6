#include "io/open_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <vector>
#include <cstring>

#include "io/confined_open.hpp"
#include "io/error.hpp"
#include "io/test_switch.hpp"
#include "io/writer_probe.hpp"
#include "io/system_call_error.hpp"

namespace ncafs {

namespace {
int64_t nanoseconds(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }
}  // namespace

FileIdentity identity_from_stat(const struct stat& st) {
    return FileIdentity{st.st_dev, st.st_ino, nanoseconds(st.st_mtim), static_cast<uint64_t>(st.st_size),
                        nanoseconds(st.st_ctim)};
}

namespace {
// One second, or the test-only NCAFS_TEST_SETTLE_MS (read once; tests/README.md).
int64_t initial_settling_window_ns() {
    const auto ms = test_milliseconds("NCAFS_TEST_SETTLE_MS");
    return ms ? std::chrono::nanoseconds(*ms).count() : 1'000'000'000;
}

std::atomic<int64_t>& settling_window_ns() {
    static std::atomic<int64_t> window{initial_settling_window_ns()};
    return window;
}
}  // namespace

void set_settling_window(std::chrono::nanoseconds window) { settling_window_ns() = window.count(); }

bool changed_within_last_second(const struct stat& st) {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return nanoseconds(now) - std::max(nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)) < settling_window_ns().load();
}

std::optional<FileIdentity> identity_of(const std::string& path) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return identity_from_stat(st);
}

namespace {
// FNV-1a: stable across runs and builds (std::hash need not be).
uint64_t fnv1a(const std::string& text) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
    return h;
}
}  // namespace

FileIdentity identity_of_remote(const RemoteBytes& object) {
    const auto version = static_cast<int64_t>(fnv1a(object.version()));
    return FileIdentity{kRemoteDevice, static_cast<ino_t>(fnv1a(object.url())), version, object.size(), version};
}

std::shared_ptr<const OpenFile> OpenFile::remote(std::shared_ptr<const RemoteBytes> object) {
    if (!object) throw UsageError("OpenFile::remote of no object");
    auto file = std::make_shared<OpenFile>(Private{}, -1, object->url(), identity_of_remote(*object));
    file->remote_ = std::move(object);
    return file;
}

std::shared_ptr<const OpenFile> OpenFile::open(const std::string& path, const ConfinedRoots* within) {
    OpenResult r = open_regular_file(path, within);
    if (!r.fd) throw SystemCallError(path, "cannot open: " + r.reason, r.error);
    return adopt(r.fd.release(), path, r.st);
}

std::shared_ptr<const OpenFile> OpenFile::adopt(int fd, const std::string& path) {
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        throw SystemCallError(path, std::string("cannot stat: ") + std::strerror(e), e);
    }
    return adopt(fd, path, st);
}

std::shared_ptr<const OpenFile> OpenFile::adopt(int fd, const std::string& path, const struct stat& st) {
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw SourceError(path, "not a regular file");
    }
    auto file = std::make_shared<OpenFile>(Private{}, fd, path, identity_from_stat(st));
    file->vouched_ = !changed_within_last_second(st);
    return file;
}

std::shared_ptr<const OpenFile> OpenFile::adopt_immutable(int fd, const std::string& path,
                                                          const FileIdentity& identity) {
    auto file = std::make_shared<OpenFile>(Private{}, fd, path, identity);
    file->immutable_ = true;
    return file;
}

namespace {
// One pread of bytes [offset, offset + n) (again on EINTR): a regular file
// gives them all but at its end. -1, errno set, on error.
ssize_t pread_once(int fd, uint8_t* buffer, size_t n, uint64_t offset) {
    ssize_t r;
    do r = ::pread(fd, buffer, n, static_cast<off_t>(offset));
    while (r < 0 && errno == EINTR);
    return r;
}
}  // namespace

std::shared_ptr<const OpenFile> OpenFile::open_with_head(int fd, const std::string& path, size_t head_limit) {
    UniqueFd owned(fd);
    thread_local std::vector<uint8_t> buffer;  // the largest head wanted, once per thread
    if (buffer.size() < head_limit) buffer.resize(head_limit);
    const ssize_t n = pread_once(fd, buffer.data(), head_limit, 0);
    const int read_error = errno;
    struct stat st{};
    if (::fstat(fd, &st) != 0) throw SourceError(path, std::string("cannot stat: ") + std::strerror(errno));
    if (std::string refusal = refusal_of_non_regular(st); !refusal.empty()) throw SourceError(path, refusal);
    if (n < 0)
        throw SourceError(path, "read of the first " + std::to_string(head_limit) +
                                    " bytes failed: " + std::strerror(read_error));
    auto file = std::make_shared<OpenFile>(Private{}, owned.get(), path, identity_from_stat(st));
    owned.release();  // the OpenFile closes it now
    file->vouched_ = !changed_within_last_second(st);
    const size_t expected = static_cast<size_t>(std::min<uint64_t>(file->size(), head_limit));
    std::vector<uint8_t> head(buffer.begin(), buffer.begin() + std::min<size_t>(static_cast<size_t>(n), expected));
    if (head.size() < expected) {
        // Short of the size the fstat gives: it grew since the read (or the
        // read stopped early). The rest by pread_exact, which checks again.
        head.resize(expected);
        file->pread_exact(head.data() + n, expected - static_cast<size_t>(n), static_cast<uint64_t>(n));
    } else if (static_cast<size_t>(n) > expected) {
        throw SourceError(path, "changed while being opened (" + std::to_string(n) + " bytes read, size now " +
                                    std::to_string(file->size()) + "): not served");
    }
    // The fstat above came after the read: a change during it moved mtime or
    // ctime within the settling window, and then the bytes are read again.
    if (!head.empty() && changed_within_last_second(st))
        file->confirm_by_second_read(head.data(), head.size(),
                                     [&](void* again) { file->pread_unchecked(again, head.size(), 0); });
    MutexLock lock(file->first_read_mutex_);
    file->head_ = std::move(head);
    return file;
}

std::vector<uint8_t> OpenFile::take_head() const {
    std::vector<uint8_t> head;
    MutexLock lock(first_read_mutex_);
    head.swap(head_);
    return head;
}

OpenFile::~OpenFile() {
    if (fd_ >= 0) ::close(fd_);
}

void OpenFile::pread_unchecked(void* buffer, size_t n, uint64_t offset) const {
    if (remote_) return remote_->read(buffer, n, offset);
    auto* p = static_cast<char*>(buffer);
    size_t done = 0;
    while (done < n) {
        ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            throw SourceError(path_, "read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                         " failed: " + std::strerror(errno));
        }
        if (r == 0)
            throw SourceError(path_, "file ends at byte " + std::to_string(offset + done) + ", expected " +
                                         std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                         " (file changed or truncated?)");
        done += static_cast<size_t>(r);
    }
}

void OpenFile::keep_first_read(std::vector<uint8_t> bytes) const {
    if (remote_ || bytes.size() != identity_.size) return;  // only a whole local file
    MutexLock lock(first_read_mutex_);
    first_read_ = std::move(bytes);
    first_read_serves_.store(1, std::memory_order_release);
}

std::vector<uint8_t> OpenFile::take_kept_file() const {
    std::vector<uint8_t> bytes;
    if (first_read_serves_.load(std::memory_order_acquire) == 0) return bytes;
    MutexLock lock(first_read_mutex_);
    const uint32_t serves = first_read_serves_.load(std::memory_order_relaxed);
    if (serves == 0) return bytes;
    first_read_serves_.store(serves - 1, std::memory_order_relaxed);
    if (serves > 1) return first_read_;  // shared with a read along: the last serve moves them out
    bytes.swap(first_read_);
    return bytes;
}

bool OpenFile::add_kept_file_serve() const {
    if (first_read_serves_.load(std::memory_order_acquire) == 0) return false;
    MutexLock lock(first_read_mutex_);
    const uint32_t serves = first_read_serves_.load(std::memory_order_relaxed);
    if (serves == 0) return false;
    first_read_serves_.store(serves + 1, std::memory_order_relaxed);
    return true;
}

void OpenFile::withdraw_kept_file_serve() const {
    MutexLock lock(first_read_mutex_);
    const uint32_t serves = first_read_serves_.load(std::memory_order_relaxed);
    if (serves > 1) first_read_serves_.store(serves - 1, std::memory_order_relaxed);
}

bool OpenFile::take_first_read(void* buffer, size_t n, uint64_t offset) const {
    const std::vector<uint8_t> bytes = take_kept_file();
    if (bytes.empty()) return false;
    if (offset > bytes.size() || n > bytes.size() - offset) return false;  // gone all the same: served once
    std::memcpy(buffer, bytes.data() + offset, n);
    return true;
}

void OpenFile::pread_exact(void* buffer, size_t n, uint64_t offset) const {
    // The bytes the opener read and checked a moment ago: the same version.
    if (take_first_read(buffer, n, offset)) return;
    read_checked(buffer, n, [&](void* to) { pread_unchecked(to, n, offset); });
}

void OpenFile::note_layout_prefix(std::span<const uint8_t> bytes) const {
    if (vouched() || remote_ || immutable_ || bytes.empty()) return;
    MutexLock lock(first_read_mutex_);
    if (!layout_prefix_) layout_prefix_ = std::make_shared<const std::vector<uint8_t>>(bytes.begin(), bytes.end());
}

void OpenFile::check_layout_prefix() const {
    std::shared_ptr<const std::vector<uint8_t>> prefix;
    {
        MutexLock lock(first_read_mutex_);
        prefix = layout_prefix_;
    }
    if (!prefix) return;
    std::vector<uint8_t> now(prefix->size());
    pread_unchecked(now.data(), now.size(), 0);
    if (now == *prefix) return;
    seen_changed_.store(true, std::memory_order_relaxed);
    throw SourceError(path_, "changed since it was opened (its first " + std::to_string(now.size()) +
                                 " bytes, which its layout was read from, differ now): not served");
}

int OpenFile::lease_for_read() const {
    if (take_read_lease(fd_)) return fd_;
    if (errno != EAGAIN) return -1;  // no lease here: the checks without one
    wait_for_writers();              // bounded; throws when a writer keeps it open
    if (take_read_lease(fd_)) return fd_;
    throw SourceError(path_, "being written by another process (changed within the last second): not served");
}

// Under a lease nobody writes between the prefix read and the last byte:
// the bytes are one version, the one the layout describes.
void OpenFile::read_unvouched(void* out, size_t n, const std::function<void(void*)>& read) const {
    struct Drop {
        int fd;
        ~Drop() {
            if (fd >= 0) drop_read_lease(fd);
        }
    } lease{lease_for_read()};
    check_layout_prefix();
    read(out);
    const struct stat st = check_unchanged_stat();
    if (lease.fd < 0 || ::fcntl(fd_, F_GETLEASE) != F_RDLCK) {  // no lease, or a writer asked meanwhile
        check_layout_prefix();
        if (n > 0) confirm_by_second_read(out, n, read);
    }
    // Settled, unchanged and of the layout's prefix: any later write moves ctime.
    if (!changed_within_last_second(st)) vouched_.store(true, std::memory_order_relaxed);
}

bool OpenFile::needs_second_read(size_t n) const {
    if (remote_ || immutable_) return false;  // each read names the version it wants (If-Match); never written
    return changed_within_last_second(check_unchanged_stat()) && n > 0;
}

void OpenFile::confirm_by_second_read(const void* first, size_t n, const std::function<void(void*)>& read_again) const {
    // A write may be in progress without moving the timestamps again (they
    // moved when it began, maybe before this file was opened): once no
    // writer holds the file, the same bytes again, or an error.
    wait_for_writers();
    std::vector<char> again(n);
    read_again(again.data());
    check_unchanged();
    if (std::memcmp(again.data(), first, n) != 0)
        throw SourceError(path_, "changing while being read (" + std::to_string(n) + " bytes): not served");
}

void OpenFile::wait_for_writers() const {
    // Bounded: a process that keeps the file open for writing makes the
    // read fail rather than hang.
    constexpr int kTries = 100;
    for (int i = 0; i < kTries; ++i) {
        switch (writers_of(fd_)) {
            case Writers::None: return;
            case Writers::Unknown: ::usleep(2000); return;  // no lease here: a moment for the write to end
            case Writers::Some: ::usleep(static_cast<useconds_t>(500 + 50 * i)); break;
        }
    }
    throw SourceError(path_, "being written by another process (changed within the last second): not served");
}

void OpenFile::check_unchanged() const {
    if (!remote_ && !immutable_) check_unchanged_stat();
}

struct stat OpenFile::check_unchanged_stat() const {
    struct stat st{};
    if (::fstat(fd_, &st) != 0) throw SourceError(path_, std::string("cannot stat: ") + std::strerror(errno));
    const FileIdentity now = identity_from_stat(st);
    if (now == identity_) return st;
    seen_changed_.store(true, std::memory_order_relaxed);
    throw SourceError(path_, "file changed since it was opened (size " + std::to_string(identity_.size) + " -> " +
                                 std::to_string(now.size) + ", mtime or ctime moved): not served");
}

std::string OpenFile::proc_path() const {
    if (remote_) throw SourceError(path_, "a remote object has no local name (netCDF-4 objects are read from a local copy)");
    return "/proc/self/fd/" + std::to_string(fd_);
}

}  // namespace ncafs
