// Access on behalf of the caller (with allow_other). The daemon reads SOURCE
// with its own rights, so before a file is opened for a user we test, with
// that user's uid, gid and supplementary groups, that the user could read
// every file it draws on directly (and search every folder on the way). The
// test runs in the request's own thread under switched filesystem
// credentials (setfsuid/setfsgid and the per-thread setgroups syscall), which
// are always restored. Decisions are cached per caller and subject; a cached
// decision holds while the watched folders report no attribute change
// (forget_all) and the folders on the way keep their owner, mode and ctime.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/confined_open.hpp"
#include "io/file_pins.hpp"
#include "io/mutex.hpp"

namespace ncafs::fs {

struct Caller {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // supplementary, sorted
    std::string key() const;
    std::string describe() const;  // "uid 1000 gid 1000"
};

// Switches the calling thread's filesystem uid/gid and supplementary groups
// to the caller's for its lifetime. ok() is false when the daemon may not
// assume them (not root); then nothing was changed.
class AssumedCredentials {
public:
    explicit AssumedCredentials(const Caller& caller);
    ~AssumedCredentials();
    AssumedCredentials(const AssumedCredentials&) = delete;
    AssumedCredentials& operator=(const AssumedCredentials&) = delete;
    bool ok() const { return ok_; }

private:
    void restore();
    bool ok_ = false;
    uid_t saved_fsuid_ = 0;
    gid_t saved_fsgid_ = 0;
    std::vector<gid_t> saved_groups_;
    bool groups_changed_ = false;
};

// The outcome of a check: allowed, or the file refused and why (errno).
struct AccessVerdict {
    bool allowed = true;
    std::string file;
    int error = 0;
    uint64_t pins_moved = 0;  // generations the check's own pins moved FilePins on
    // A file's name is a symlink: what it names may change where no folder
    // fingerprint or watch sees it, so the decision is not kept.
    bool through_links = false;
};

// Tests each file for reading as the caller (the current credentials must be
// the caller's). A missing file is not a refusal: reading it fails anyway.
// With `within`, each file is opened as the caller through the confined walk
// (io/confined_open.hpp) from its root's descriptor (and the root itself
// searched by name: a trusted one), and what was found there is pinned in
// *pins (io/file_pins.hpp): the file's identity, or "absent".
AccessVerdict readable_by_current_credentials(const std::vector<std::string>& files,
                                              const ConfinedRoots* within = nullptr,
                                              std::vector<FilePin>* pins = nullptr);

class CallerAccess {
public:
    // within: the allowed roots; given, every check opens the files as the
    // caller and pins them (FilePins::shared(), enforced from then on).
    explicit CallerAccess(std::shared_ptr<const ConfinedRoots> within = nullptr);

    // Bound of cached decisions; beyond it the cache starts afresh.
    static constexpr size_t kMaxDecisions = 4096;

    // subject: the file opened (its path and stat: owner, mode, identity);
    // files: every file it draws on; cacheable: false when some of them lie
    // in folders that are not watched (then every open checks again).
    AccessVerdict check(const Caller& caller, const std::string& subject, const struct stat& subject_st,
                        const std::shared_ptr<const std::vector<std::string>>& files, bool cacheable);
    // Drops every cached decision (a watched file's attributes changed).
    void forget_all();
    // Counts forget_all calls and pin changes (FilePins): a decision taken
    // at an older generation may be stale.
    uint64_t generation() const;
    size_t checks_run() const;

private:
    struct Decision {
        AccessVerdict verdict;
        std::shared_ptr<const std::vector<std::string>> files;
        std::vector<std::string> folders;  // every folder on the way to a file
        std::string fingerprint;           // of those folders when decided
        uint64_t pins_generation = 0;      // FilePins' when decided
    };
    AccessVerdict run_check(const Caller& caller, const std::vector<std::string>& files);
    uint64_t pins_generation() const;

    std::shared_ptr<const ConfinedRoots> within_;

    mutable Mutex mutex_;  // lock order: a leaf (folders are stat'ed outside it)
    std::unordered_map<std::string, Decision> decisions_ NCAFS_GUARDED_BY(mutex_);
    uint64_t generation_ NCAFS_GUARDED_BY(mutex_) = 0;
    size_t checks_run_ NCAFS_GUARDED_BY(mutex_) = 0;
};

}  // namespace ncafs::fs
