#include "remote/disk_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "codecs/error.hpp"

namespace ncafs::remote {
namespace {

namespace fsys = std::filesystem;
constexpr const char* kMetaMagic = "ncafs-remote-meta 1";

uint64_t fnv1a(std::string_view s, uint64_t basis) {
    for (unsigned char c : s) basis = (basis ^ c) * 0x100000001b3ull;
    return basis;
}

// 128 bits of two FNV-1a variants: names, not security (the directory is the user's).
std::string name_hash(std::string_view s) {
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(fnv1a(s, 0xcbf29ce484222325ull)),
                  static_cast<unsigned long long>(fnv1a(s, 0x84222325cbf29ce4ull)));
    return out;
}

void touch(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

struct CachedFile {
    fsys::file_time_type used;
    uint64_t bytes;
    fsys::path path;
};

std::vector<CachedFile> list_files(const fsys::path& dir) {
    std::vector<CachedFile> files;
    std::error_code ec;
    for (const auto& entry : fsys::directory_iterator(dir, ec)) {
        std::error_code e1, e2;
        auto when = entry.last_write_time(e1);
        auto bytes = entry.file_size(e2);
        if (!e1 && !e2) files.push_back({when, bytes, entry.path()});
    }
    return files;
}

// Left by a process that died mid-write; an hour is far longer than any write.
void remove_stale_temporaries(const fsys::path& dir) {
    auto cutoff = fsys::file_time_type::clock::now() - std::chrono::hours(1);
    for (const CachedFile& f : list_files(dir)) {
        std::error_code ec;
        if (f.used < cutoff) fsys::remove(f.path, ec);
    }
}

}  // namespace

std::string object_key(const std::string& url, const std::string& version) { return url + "\n" + version; }

DiskCache::DiskCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes ? max_bytes : 1ull << 30) {
    for (const char* sub : {"meta", "blocks", "objects", "tmp"}) {
        std::error_code ec;
        fsys::create_directories(fsys::path(dir_) / sub, ec);
        if (ec) throw SourceError(dir_, "cannot create the cache directory: " + ec.message());
    }
    evict();  // learns the current total (and trims it when the bound shrank)
}

std::string DiskCache::temp_path() const {
    static std::atomic<uint64_t> counter{0};
    std::ostringstream name;
    name << dir_ << "/tmp/" << ::getpid() << "." << std::this_thread::get_id() << "." << counter++;
    return name.str();
}

void DiskCache::write_file(const std::string& path, const char* data, size_t n) {
    std::string temp = temp_path();
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out.write(data, static_cast<std::streamsize>(n));
        if (!out.good()) {
            std::error_code ec;
            fsys::remove(temp, ec);
            return;  // a full disk loses a cache entry, not a read
        }
    }
    publish(temp, path, n);
}

void DiskCache::publish(const std::string& temp, const std::string& path, uint64_t bytes) {
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        std::error_code ec;
        fsys::remove(temp, ec);
        return;
    }
    account(bytes);
}

std::optional<ObjectMeta> DiskCache::load_meta(const std::string& url) const {
    std::ifstream in(dir_ + "/meta/" + name_hash(url));
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
    write_file(dir_ + "/meta/" + name_hash(meta.url), text.data(), text.size());
}

Block DiskCache::load_block(const std::string& key, uint64_t index, size_t length) const {
    std::string path = dir_ + "/blocks/" + name_hash(key) + "." + std::to_string(index);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    auto data = std::make_shared<std::vector<char>>(length);
    struct stat st {};
    ssize_t got = ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == length
                      ? ::pread(fd, data->data(), length, 0) : -1;
    ::close(fd);
    if (got != static_cast<ssize_t>(length)) {
        ::unlink(path.c_str());  // torn or foreign: fetch it again
        return nullptr;
    }
    touch(path);
    return data;
}

void DiskCache::store_block(const std::string& key, uint64_t index, const std::vector<char>& data) {
    write_file(dir_ + "/blocks/" + name_hash(key) + "." + std::to_string(index), data.data(), data.size());
}

std::string DiskCache::object_path(const std::string& key) const { return dir_ + "/objects/" + name_hash(key); }

bool DiskCache::exists(const std::string& path, uint64_t size) const {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != size) return false;
    touch(path);
    return true;
}

void DiskCache::account(uint64_t bytes) {
    if ((used_ += bytes) > max_bytes_) evict();
}

// Under an exclusive flock so two mounts sharing the directory do not both
// count and delete; oldest use first down to 90% of the bound.
void DiskCache::evict() {
    int lock = ::open((dir_ + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0) ::flock(lock, LOCK_EX);
    std::vector<CachedFile> files = list_files(fsys::path(dir_) / "blocks");
    std::vector<CachedFile> objects = list_files(fsys::path(dir_) / "objects");
    files.insert(files.end(), objects.begin(), objects.end());
    uint64_t total = 0;
    for (const CachedFile& f : files) total += f.bytes;
    if (total > max_bytes_) {
        std::sort(files.begin(), files.end(), [](const CachedFile& a, const CachedFile& b) { return a.used < b.used; });
        for (const CachedFile& f : files) {
            if (total <= max_bytes_ / 10 * 9) break;
            std::error_code ec;
            if (fsys::remove(f.path, ec)) total -= f.bytes;
        }
    }
    used_ = total;
    remove_stale_temporaries(fsys::path(dir_) / "tmp");
    if (lock >= 0) ::close(lock);
}

}  // namespace ncafs::remote
