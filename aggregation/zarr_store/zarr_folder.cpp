#include "aggregation/zarr_store/zarr_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "codecs/error.hpp"
#include "io/system_call_error.hpp"

namespace ncafs::agg {

namespace {

std::vector<std::string> components_of(const std::string& key) {
    std::vector<std::string> parts;
    size_t begin = 0;
    while (true) {
        const size_t slash = key.find('/', begin);
        parts.push_back(key.substr(begin, slash == std::string::npos ? std::string::npos : slash - begin));
        if (slash == std::string::npos) return parts;
        begin = slash + 1;
    }
}

// Refuses (with allow_other) a member that fewer users may read than those
// the caller check let through; the read then fails for every caller.
void require_readers(int fd, const std::string& path, const ZarrReaders& readers) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        throw SystemCallError(path, std::string("cannot stat: ") + std::strerror(e), e);
    }
    if (auto why = fewer_readers_than(fd, st, readers); !why.empty())
        throw SourceError(path, "Zarr chunk refused with allow_other: " + why);
}

// Opens key beneath the folder at `at`, one component at a time, never
// through a symlink (the last a folder when `folder`, else anything, opened
// non-blocking); with readers, each component from `trusted` on must be
// readable by all of them. -1 with errno set when a component cannot be opened.
// The key comes from the store (hostile): key_refusal rejects ".." and
// absolute forms first, and `at` is a folder fd opened through the confined walk.
int open_beneath(int at, const std::string& key, const std::string& path, bool folder, const ZarrReaders* readers,
                 size_t trusted) {
    if (auto why = key_refusal(key); !why.empty()) throw SourceError(path, "Zarr key refused: " + why);
    const auto parts = components_of(key);
    UniqueFd held;
    int fd = -1;
    for (size_t i = 0; i < parts.size(); ++i) {
        const bool last = i + 1 == parts.size();
        const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last && !folder ? O_NONBLOCK : O_DIRECTORY);
        fd = ::openat(at, parts[i].c_str(), flags);
        if (fd < 0) return -1;
        if (readers && i >= trusted) {
            UniqueFd guard(fd);
            require_readers(fd, path, *readers);
            fd = guard.release();
        }
        if (last) break;
        held = UniqueFd(fd);
        at = fd;
    }
    return fd;
}

std::string open_failure(int e) {
    return e == ELOOP || e == ENOTDIR
               ? "a symlink or not a folder on the way: a store's keys are never followed through symlinks"
               : std::strerror(e);
}

}  // namespace

UniqueFd open_store_subfolder(int store, const std::string& path, const std::string& key, const ZarrReaders* readers) {
    const std::string folder = path + "/" + key;
    UniqueFd fd(open_beneath(store, key, folder, true, readers, 0));
    if (!fd) throw SourceError(folder, "cannot open the Zarr group: " + open_failure(errno));
    return fd;
}

std::shared_ptr<const OpenFile> ZarrFolder::open(const std::string& key, const ZarrReaders* readers,
                                                 size_t trusted) const {
    if (!readers && members_readers_) {
        readers = &*members_readers_;
        trusted = 0;
    }
    const std::string path = path_of(key);
    const int fd = open_beneath(fd_.get(), key, path, false, readers, trusted);
    if (fd < 0) {
        const int e = errno;
        if (e == ENOENT) return nullptr;
        throw SourceError(path, "Zarr store member cannot be opened: " + open_failure(e));
    }
    return OpenFile::adopt(fd, path);  // refuses anything but a regular file
}

bool ZarrFolder::for_each_subfolder(uint64_t max_entries, const std::function<bool(const std::string&)>& visit) const {
    DIR* listing = ::fdopendir(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!listing) {
        const int e = errno;
        throw SystemCallError(path_, std::string("cannot list the Zarr store: ") + std::strerror(e), e);
    }
    ::rewinddir(listing);
    uint64_t seen = 0;
    bool complete = true;
    while (const dirent* e = ::readdir(listing)) {
        if (++seen > max_entries) {
            complete = false;
            break;
        }
        const std::string name = e->d_name;
        if (name.empty() || name[0] == '.') continue;
        struct stat st {};
        if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;  // a symlink is DT_LNK: not followed
        if (e->d_type == DT_UNKNOWN &&
            (::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)))
            continue;
        if (!visit(name)) break;
    }
    ::closedir(listing);
    return complete;
}

}  // namespace ncafs::agg
