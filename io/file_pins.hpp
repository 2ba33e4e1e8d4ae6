// Which file each path named when a caller was last checked for it (a pin),
// so that a file opened later by that path for reading is served only when
// it is the very file the check saw. With callers checked (a mount with
// allow_other) the daemon enforces the pins: every partition and every file
// a reference set names is opened through the confined walk and compared,
// by (device, inode, birth time), with the pin of its path; another file (a
// symlink retargeted, a file renamed over, one created where none was at
// the check) is refused, and the generation moves on, so that every grant
// is judged again before it reads anything more. A path never checked is
// refused too. Process-wide, thread-safe. Without enforcement (single-user
// mounts, commands) nothing is compared.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "io/mutex.hpp"

namespace ncafs {

struct FilePin {
    dev_t device = 0;
    ino_t inode = 0;
    int64_t birth_ns = 0;  // statx btime where the file system has it, else 0
    bool absent = false;   // nothing could be opened there at the check
    bool operator==(const FilePin&) const = default;
};

class FilePins {
public:
    // Pins held at most; beyond it all are dropped (and the generation moves on).
    static constexpr size_t kMaxPins = size_t{1} << 23;

    static FilePins& shared();

    void enforce(bool on) { enforced_.store(on, std::memory_order_relaxed); }
    bool enforced() const { return enforced_.load(std::memory_order_relaxed); }

    // The pin of an open descriptor (statx); nullopt when it cannot be told.
    static std::optional<FilePin> pin_of(int fd);

    // Records what path names now, as a caller check found it. A different
    // pin before moves the generation on first, then replaces it (true); a
    // first pin does not.
    bool pin(const std::string& path, const FilePin& pin);
    // Whether fd, opened by path for reading, may be read: "" when enforced
    // pins allow it (or nothing is enforced), else the reason. A mismatch
    // moves the generation on (every grant is judged again).
    std::string refusal(const std::string& path, int fd);
    // The pin of path; nullopt when none.
    std::optional<FilePin> pinned(const std::string& path) const;
    // Moves on whenever a pin changes or a mismatch is seen.
    uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
    size_t size() const;

private:
    static uint64_t key_of(const std::string& path);
    void move_on() { generation_.fetch_add(1, std::memory_order_acq_rel); }

    std::atomic<bool> enforced_{false};
    std::atomic<uint64_t> generation_{0};
    mutable Mutex mutex_;  // a leaf
    std::unordered_map<uint64_t, FilePin> pins_ NCAFS_GUARDED_BY(mutex_);  // by a hash of the path: a collision can only refuse
};

}  // namespace ncafs
