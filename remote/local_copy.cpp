// RemoteStore::local_copy: the whole object as one file of the disk cache,
// fetched once per version (for readers that need a local file). Written
// 0600 in the cache's tmp/ (O_EXCL), sealed with its record, renamed into
// objects/ and handed over as an open fd: readers reach it by
// /proc/self/fd, never by its name. The copy is never written again, so
// its OpenFile is an immutable one named by the object's identity (URL and
// version): its own inode and times change when another process evicts or
// touches it, and inode numbers are reused, neither of which may make a
// reader fail or a cache keyed by identity take one copy for another.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/error.hpp"
#include "io/open_file.hpp"
#include "remote/cache_entry.hpp"
#include "remote/remote_object.hpp"
#include "remote/store_impl.hpp"

namespace ncafs::remote {
namespace {

constexpr uint64_t kCopyChunk = 8 << 20;

void write_all(int fd, const char* data, size_t n, uint64_t offset, const std::string& url) {
    while (n > 0) {
        ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw SourceError(url, std::string("cannot write the local copy: ") + std::strerror(errno));
        data += w, n -= static_cast<size_t>(w), offset += static_cast<uint64_t>(w);
    }
}

// Straight from the server when the object is ours (no block caching of
// what becomes a file anyway), else through its read().
void copy_into(const RemoteBytes& object, int fd, EntrySeal& seal) {
    const auto* ours = dynamic_cast<const RemoteObject*>(&object);
    std::vector<char> buffer(std::min(kCopyChunk, object.size()));
    for (uint64_t offset = 0; offset < object.size(); offset += buffer.size()) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), object.size() - offset));
        if (ours) ours->fetch(buffer.data(), n, offset);
        else object.read(buffer.data(), n, offset);
        seal.add(buffer.data(), n);
        write_all(fd, buffer.data(), n, offset, object.url());
    }
}

std::shared_ptr<const OpenFile> adopt(CachedObject&& copy, const RemoteBytes& object) {
    return OpenFile::adopt_immutable(copy.fd.release(), copy.path, identity_of_remote(object));
}

}  // namespace

std::shared_ptr<const OpenFile> RemoteStore::local_copy(const RemoteBytes& object) {
    StoreCore& core = *impl_->core;
    if (!core.disk)
        throw SourceError(object.url(), "a local copy is needed to read this object, but no cache_dir is set");
    if (object.size() > core.disk->max_bytes())
        throw SourceError(object.url(), "a local copy is needed to read this object, but its " +
                                            std::to_string(object.size()) + " bytes exceed cache_size (" +
                                            std::to_string(core.disk->max_bytes()) + " bytes)");
    const std::string key = object_key(object.url(), object.version());
    if (auto cached = core.disk->open_object(key, object.size())) return adopt(std::move(*cached), object);
    TempFile temp = core.disk->create_temp();
    EntrySeal seal;
    try {
        copy_into(object, temp.fd.get(), seal);
    } catch (...) {
        core.disk->discard(temp);
        throw;
    }
    return adopt(core.disk->publish_object(temp, key, object.size(), seal), object);
}

}  // namespace ncafs::remote
