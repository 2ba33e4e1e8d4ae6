#include "remote/disk_cache.hpp"

#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <sstream>

#include "io/error.hpp"

namespace ncafs::remote {
namespace {

constexpr const char* kMetaMagic = "ncafs-remote-meta 1";
constexpr size_t kMaxMetaBytes = 64 * 1024;  // a URL, a size, an ETag, a date
constexpr int64_t kStaleTemporaryNs = 3600'000'000'000;  // far longer than any write

int64_t nanoseconds(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

int64_t now_ns() {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return nanoseconds(now);
}

// Marks a file recently used (its mtime orders eviction), at most once a
// minute: the touch moves ctime, which a reader holding a local copy checks.
void refresh_use(int fd, struct stat& st) {
    constexpr int64_t kMinute = 60'000'000'000;
    if (now_ns() - nanoseconds(st.st_mtim) > kMinute && ::futimens(fd, nullptr) == 0) ::fstat(fd, &st);
}

CacheLog log_or_stderr(CacheLog log) {
    if (log) return log;
    return [](const std::string& line) { std::fprintf(stderr, "ncafs: %s\n", line.c_str()); };
}

// ::pread or ::pwrite of n bytes at offset `at` until all moved; false on an
// error or end of file.
template <class Io, class Bytes>
bool move_all(Io io, int fd, Bytes* data, size_t n, uint64_t at = 0) {
    for (size_t done = 0; done < n;) {
        ssize_t moved = io(fd, data + done, n - done, static_cast<off_t>(at + done));
        if (moved < 0 && errno == EINTR) continue;
        if (moved <= 0) return false;
        done += static_cast<size_t>(moved);
    }
    return true;
}

struct CountedFile {
    int folder;
    FolderEntry entry;
};

}  // namespace

std::string object_key(const std::string& url, const std::string& version) { return url + "\n" + version; }

DiskCache::DiskCache(std::string dir, uint64_t max_bytes, CacheLog log)
    : log_(log_or_stderr(std::move(log))),
      folder_(std::move(dir), {"meta", "blocks", "objects", "tmp"}, log_),
      lock_(folder_.open_or_create(folder_.root(), "lock")),
      names_(folder_, [this] { clear(); }),
      max_bytes_(max_bytes ? max_bytes : 1ull << 30) {
    evict();  // learns the current total (and trims it when the bound shrank)
}

// Files named with another secret (or none: an older cache) can never be
// found again: they would only take room.
void DiskCache::clear() {
    size_t removed = 0;
    for (Sub s : {Meta, Blocks, Objects})
        for (const FolderEntry& e : folder_.list(sub(s))) {
            folder_.remove(sub(s), e.name);
            ++removed;
        }
    if (removed) log_("remote: disk cache " + dir() + ": no valid secret for its names; " + std::to_string(removed) +
                      (removed == 1 ? " cached file" : " cached files") + " removed, a new secret written");
}

void DiskCache::write_file(Sub where, const std::string& name, const char* data, size_t n, bool sealed) {
    TempFile temp;
    try {
        temp = folder_.create_temp();
    } catch (const SourceError&) {
        return;  // a full disk loses a cache entry, not a read
    }
    std::string record;
    if (sealed) {
        EntrySeal seal;
        seal.add(data, n);
        record = seal.finish(name, n);
    }
    if (!move_all(::pwrite, temp.fd.get(), data, n) ||
        !move_all(::pwrite, temp.fd.get(), record.data(), record.size(), n))
        return folder_.discard(temp);
    if (folder_.publish(temp, sub(where), name)) account(n + record.size());
}

std::optional<ObjectMeta> DiskCache::load_meta(const std::string& url) const {
    struct stat st {};
    UniqueFd fd = folder_.open_file(sub(Meta), names_.name("meta", url), st);
    if (!fd || st.st_size <= 0 || static_cast<uint64_t>(st.st_size) > kMaxMetaBytes) return std::nullopt;
    std::string text(static_cast<size_t>(st.st_size), '\0');
    if (!move_all(::pread, fd.get(), text.data(), text.size())) return std::nullopt;
    std::istringstream in(text);
    std::string magic, stored_url, size_text;
    ObjectMeta meta;
    if (!std::getline(in, magic) || magic != kMetaMagic || !std::getline(in, stored_url) || stored_url != url ||
        !std::getline(in, size_text) || !std::getline(in, meta.etag) || !std::getline(in, meta.last_modified))
        return std::nullopt;
    auto [end, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), meta.size);
    if (ec != std::errc() || end != size_text.data() + size_text.size()) return std::nullopt;
    meta.url = url;
    return meta;
}

void DiskCache::store_meta(const ObjectMeta& meta) {
    for (const std::string* field : {&meta.url, &meta.etag, &meta.last_modified})
        if (field->find('\n') != std::string::npos) return;  // cannot be stored line by line
    std::string text = std::string(kMetaMagic) + "\n" + meta.url + "\n" + std::to_string(meta.size) + "\n" + meta.etag +
                       "\n" + meta.last_modified + "\n";
    if (text.size() > kMaxMetaBytes) return;
    write_file(Meta, names_.name("meta", meta.url), text.data(), text.size(), false);
}

Block DiskCache::load_block(const std::string& key, uint64_t index, size_t length) const {
    const std::string name = names_.name("block", key, index);
    struct stat st {};
    UniqueFd fd = folder_.open_file(sub(Blocks), name, st);
    if (!fd) return nullptr;
    auto data = std::make_shared<std::vector<char>>(length + kRecordBytes);
    if (static_cast<uint64_t>(st.st_size) != length + kRecordBytes ||
        !move_all(::pread, fd.get(), data->data(), data->size()) ||
        !record_matches(std::string_view(data->data() + length, kRecordBytes), name, data->data(), length)) {
        folder_.remove(sub(Blocks), name);  // torn or foreign: fetch it again
        return nullptr;
    }
    data->resize(length);
    refresh_use(fd.get(), st);
    return data;
}

void DiskCache::store_block(const std::string& key, uint64_t index, const std::vector<char>& data) {
    write_file(Blocks, names_.name("block", key, index), data.data(), data.size(), true);
}

std::optional<CachedObject> DiskCache::open_object(const std::string& key, uint64_t size) const {
    const std::string name = names_.name("object", key);
    CachedObject object;
    object.fd = folder_.open_file(sub(Objects), name, object.st);
    if (!object.fd) return std::nullopt;
    if (!copy_intact(object.fd.get(), name, size)) {
        folder_.remove(sub(Objects), name);  // torn or foreign: fetch it again
        return std::nullopt;
    }
    refresh_use(object.fd.get(), object.st);
    object.path = folder_.path_of(sub(Objects), name);
    return object;
}

bool DiskCache::copy_intact(int fd, const std::string& name, uint64_t size) const {
    struct stat st {};
    std::string bytes(kRecordBytes, '\0');
    EntryRecord record;
    if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != size + kRecordBytes ||
        !move_all(::pread, fd, bytes.data(), bytes.size(), size) ||
        !parse_record(bytes, record) || record.name != name || record.length != size)
        return false;
    // The whole copy hashed once per process and file: a copy is never
    // written after it is published, and is read often (each revalidation).
    const Verified seen{st.st_dev, st.st_ino, record.digest};
    {
        MutexLock lock(verified_mutex_);
        if (verified_.count(seen)) return true;
    }
    Digest digest{};
    if (!digest_of_file(fd, size, digest) || digest != record.digest) return false;
    MutexLock lock(verified_mutex_);
    if (verified_.size() >= 4096) verified_.clear();  // bounded
    verified_.insert(seen);
    return true;
}

CachedObject DiskCache::publish_object(TempFile& temp, const std::string& key, uint64_t bytes, EntrySeal& seal) {
    const std::string name = names_.name("object", key);
    const std::string record = seal.finish(name, bytes);
    CachedObject copy;
    copy.fd = std::move(temp.fd);  // read through this descriptor, whatever becomes of the name
    copy.path = folder_.path_of(sub(Objects), name);
    // Synced before the rename: after a crash the name holds the whole copy or nothing.
    if (!move_all(::pwrite, copy.fd.get(), record.data(), record.size(), bytes) || ::fsync(copy.fd.get()) != 0 ||
        ::fstat(copy.fd.get(), &copy.st) != 0) {
        const int e = errno;
        folder_.discard(temp);
        throw SourceError(copy.path, std::string("cannot write the local copy: ") + std::strerror(e));
    }
    if (folder_.publish_new(temp, sub(Objects), name)) {
        account(bytes + record.size());
        return copy;
    }
    // Another process published this copy first: theirs stays (its readers
    // hold it) and is read here too, a file with a name in cache_dir (HDF5
    // opens /proc/self/fd/N again, which the sandbox must let it reach);
    // ours, unlinked, only when theirs cannot be opened.
    if (auto theirs = open_object(key, bytes)) return std::move(*theirs);
    return copy;
}

void DiskCache::account(uint64_t bytes) {
    if ((used_ += bytes) > max_bytes_) evict();
}

// Under an exclusive flock so two processes sharing the directory do not
// both delete; oldest use first down to 90% of the bound. Only regular
// files count; unlinkat never follows a link out of the folder. Never waits
// for the lock: a process that holds it is evicting (or was stopped, or
// hangs); this one only counts and tries again at its next fill, so that
// no read and no unmount waits on another process.
void DiskCache::evict() {
    if (evicting_.exchange(true)) return;  // another thread of ours is at it
    struct Done {
        std::atomic<bool>& evicting;
        ~Done() { evicting.store(false); }
    } done{evicting_};
    const bool locked = lock_ && ::flock(lock_.get(), LOCK_EX | LOCK_NB) == 0;
    std::vector<CountedFile> files;
    for (Sub s : {Blocks, Objects})
        for (FolderEntry& e : folder_.list(sub(s)))
            if (S_ISREG(e.st.st_mode)) files.push_back({sub(s), std::move(e)});
    uint64_t total = 0;
    for (const CountedFile& f : files) total += static_cast<uint64_t>(f.entry.st.st_size);
    if (locked && total > max_bytes_) {
        std::sort(files.begin(), files.end(), [](const CountedFile& a, const CountedFile& b) {
            return nanoseconds(a.entry.st.st_mtim) < nanoseconds(b.entry.st.st_mtim);
        });
        for (const CountedFile& f : files) {
            if (total <= max_bytes_ / 10 * 9) break;
            if (::unlinkat(f.folder, f.entry.name.c_str(), 0) == 0) total -= static_cast<uint64_t>(f.entry.st.st_size);
        }
    }
    used_ = total;
    if (!locked) return;
    remove_stale_temporaries();
    ::flock(lock_.get(), LOCK_UN);
}

// Left by a process that died mid-write.
void DiskCache::remove_stale_temporaries() {
    const int64_t now = now_ns();
    for (const FolderEntry& e : folder_.list(sub(Tmp)))
        if (now - nanoseconds(e.st.st_mtim) > kStaleTemporaryNs) folder_.remove(sub(Tmp), e.name);
}

}  // namespace ncafs::remote
