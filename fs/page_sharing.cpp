#include "fs/page_sharing.hpp"

namespace ncafs::fs {

PageSharing::Admission PageSharing::admit(fuse_ino_t ino, const std::string& who, uint64_t generation) {
    MutexLock lock(mutex_);
    Pages& p = inodes_[ino];
    const bool only_who = p.holders.empty() || (p.holders.size() == 1 && p.holders.count(who));
    Admission a;
    if (p.known && p.generation == generation) {
        a.pages = true;
    } else if (only_who) {
        // Nobody else reads these pages: start them afresh at this generation.
        a.pages = true;
        a.invalidate = true;
        p.generation = generation;
        p.known = true;
    }
    if (a.pages) ++p.holders[who];
    return a;
}

void PageSharing::release(fuse_ino_t ino, const std::string& who) {
    MutexLock lock(mutex_);
    auto it = inodes_.find(ino);
    if (it == inodes_.end()) return;
    auto holder = it->second.holders.find(who);
    if (holder != it->second.holders.end() && --holder->second == 0) it->second.holders.erase(holder);
}

bool PageSharing::others_hold(fuse_ino_t ino, const std::string& who) {
    MutexLock lock(mutex_);
    auto it = inodes_.find(ino);
    if (it == inodes_.end()) return false;
    for (const auto& [caller, count] : it->second.holders)
        if (caller != who && count > 0) return true;
    return false;
}

bool PageSharing::judged_again(fuse_ino_t ino, const std::string& who, uint64_t generation) {
    MutexLock lock(mutex_);
    Pages& p = inodes_[ino];
    for (const auto& [caller, count] : p.holders)
        if (caller != who && count > 0) return false;
    p.generation = generation;
    p.known = true;
    return true;
}

void PageSharing::forget(fuse_ino_t ino) {
    MutexLock lock(mutex_);
    auto it = inodes_.find(ino);
    if (it != inodes_.end() && it->second.holders.empty()) inodes_.erase(it);
}

}  // namespace ncafs::fs
