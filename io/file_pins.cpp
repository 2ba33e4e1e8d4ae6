#include "io/file_pins.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <functional>

namespace ncafs {

FilePins& FilePins::shared() {
    static FilePins pins;
    return pins;
}

std::optional<FilePin> FilePins::pin_of(int fd) {
    struct statx sx {};
    if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_BTIME, &sx) != 0) return std::nullopt;
    FilePin p;
    p.device = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    p.inode = sx.stx_ino;
    // An inode number freed and reused by another file: the birth time tells them apart.
    if (sx.stx_mask & STATX_BTIME)
        p.birth_ns = static_cast<int64_t>(sx.stx_btime.tv_sec) * 1000000000 + sx.stx_btime.tv_nsec;
    return p;
}

uint64_t FilePins::key_of(const std::string& path) { return std::hash<std::string>{}(path); }

bool FilePins::pin(const std::string& path, const FilePin& pin) {
    const uint64_t key = key_of(path);
    MutexLock lock(mutex_);
    auto it = pins_.find(key);
    if (it != pins_.end() && it->second == pin) return false;
    // A first pin changes nothing a read could have opened (an unpinned path
    // is refused). Another one moves the generation on first: a read that
    // meets the new file after this sees a new generation, and one that
    // meets it before sees the old pin.
    if (it == pins_.end()) {
        if (pins_.size() >= kMaxPins) {
            move_on();
            pins_.clear();
        }
        pins_.emplace(key, pin);
        return false;
    }
    move_on();
    it->second = pin;
    return true;
}

std::string FilePins::refusal(const std::string& path, int fd) {
    if (!enforced()) return {};
    const auto now = pin_of(fd);
    MutexLock lock(mutex_);
    auto it = pins_.find(key_of(path));
    if (it == pins_.end()) return "was not checked for the caller: refused";
    if (now && !it->second.absent && *now == it->second) return {};
    move_on();  // every grant is judged again (and pins the file there now, if its caller may read it)
    return it->second.absent ? "was created after the caller check: refused until checked again"
                             : "is another file than the one checked for the caller: refused until checked again";
}

std::optional<FilePin> FilePins::pinned(const std::string& path) const {
    MutexLock lock(mutex_);
    auto it = pins_.find(key_of(path));
    if (it == pins_.end()) return std::nullopt;
    return it->second;
}

size_t FilePins::size() const {
    MutexLock lock(mutex_);
    return pins_.size();
}

}  // namespace ncafs
