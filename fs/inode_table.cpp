#include "fs/inode_table.hpp"

namespace ncafs::fs {

InodeTable::InodeTable() {
    // The root is never forgotten.
    nodes_[FUSE_ROOT_ID] = Node{"", 1, std::nullopt, false};
    by_path_[""] = FUSE_ROOT_ID;
}

fuse_ino_t InodeTable::lookup(const std::string& virtual_path) {
    MutexLock lock(mutex_);
    auto it = by_path_.find(virtual_path);
    if (it != by_path_.end()) {
        ++nodes_[it->second].lookups;
        return it->second;
    }
    fuse_ino_t ino = next_++;
    nodes_[ino] = Node{virtual_path, 1, std::nullopt, false};
    by_path_[virtual_path] = ino;
    return ino;
}

bool InodeTable::forget(fuse_ino_t ino, uint64_t count) {
    if (ino == FUSE_ROOT_ID) return false;
    MutexLock lock(mutex_);
    auto it = nodes_.find(ino);
    if (it == nodes_.end()) return false;
    if (it->second.lookups > count) {
        it->second.lookups -= count;
        return false;
    }
    by_path_.erase(it->second.path);
    nodes_.erase(it);
    return true;
}

std::optional<std::string> InodeTable::path_of(fuse_ino_t ino) const {
    MutexLock lock(mutex_);
    auto it = nodes_.find(ino);
    if (it == nodes_.end()) return std::nullopt;
    return it->second.path;
}

bool InodeTable::note_identity(fuse_ino_t ino, const FileIdentity& identity) {
    MutexLock lock(mutex_);
    auto it = nodes_.find(ino);
    if (it == nodes_.end()) return false;
    bool changed = it->second.identity && !(*it->second.identity == identity);
    it->second.identity = identity;
    if (changed) it->second.read_failed = false;
    return changed;
}

void InodeTable::set_read_failure(fuse_ino_t ino, bool failed) {
    MutexLock lock(mutex_);
    auto it = nodes_.find(ino);
    if (it != nodes_.end()) it->second.read_failed = failed;
}

bool InodeTable::had_read_failure(fuse_ino_t ino) const {
    MutexLock lock(mutex_);
    auto it = nodes_.find(ino);
    return it != nodes_.end() && it->second.read_failed;
}

size_t InodeTable::size() const {
    MutexLock lock(mutex_);
    return nodes_.size();
}

}  // namespace ncafs::fs
