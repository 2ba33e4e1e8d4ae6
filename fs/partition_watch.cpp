#include "fs/partition_watch.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fs/log.hpp"

namespace ncafs::fs {

namespace {

constexpr uint32_t kWatchMask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                                IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
// Events that change who may read a file, or which file a name is.
constexpr uint32_t kAttributeEvents = IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
constexpr uint32_t kFolderGone = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED;

std::pair<std::string, std::string> split_path(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return {".", path};
    return {slash == 0 ? std::string("/") : path.substr(0, slash), path.substr(slash + 1)};
}

std::string stamp_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return "-";
    return std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' + std::to_string(st.st_size) + ':' +
           std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

PartitionWatch::PartitionWatch(ContentsChanged contents_changed, AttributesChanged attributes_changed)
    : contents_changed_(std::move(contents_changed)), attributes_changed_(std::move(attributes_changed)) {}

PartitionWatch::~PartitionWatch() { stop(); }

void PartitionWatch::start() {
    inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (inotify_fd_ < 0 || stop_fd_ < 0) {
        log_line(LogLevel::Warning, std::string("partition folders are not watched (inotify: ") + std::strerror(errno) +
                                        "): changes are found by a check on each open");
        return;
    }
    thread_ = std::thread([this] { loop(); });
}

void PartitionWatch::stop() {
    if (thread_.joinable()) {
        uint64_t one = 1;
        if (::write(stop_fd_, &one, sizeof one) < 0) log_line(LogLevel::Error, "cannot stop the partition watch");
        thread_.join();
    }
    if (inotify_fd_ >= 0) ::close(inotify_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
    inotify_fd_ = stop_fd_ = -1;
}

int PartitionWatch::watch_folder(const std::string& folder) {
    auto it = wd_of_folder_.find(folder);
    if (it != wd_of_folder_.end()) return it->second;
    if (inotify_fd_ < 0 || !thread_.joinable() || folders_.size() >= kMaxFolders) return -1;
    int wd = ::inotify_add_watch(inotify_fd_, folder.c_str(), kWatchMask);
    if (wd < 0) {
        if (errno == ENOSPC)
            log_once(LogLevel::Warning, "the system's inotify watch limit is reached (fs.inotify.max_user_watches): "
                                        "partition folders beyond it are checked on each open");
        return -1;
    }
    wd_of_folder_[folder] = wd;
    folders_.try_emplace(wd, Folder{folder, {}});  // the same folder by another path shares its wd
    return wd;
}

void PartitionWatch::drop_folder(int wd) {
    folders_.erase(wd);
    std::erase_if(wd_of_folder_, [wd](const auto& entry) { return entry.second == wd; });  // every path to it
}

void PartitionWatch::FolderNames::settle() {
    std::sort(entries_.begin(), entries_.end());
    entries_.erase(std::unique(entries_.begin(), entries_.end()), entries_.end());
}

void PartitionWatch::FolderNames::remove_inode(fuse_ino_t ino) {
    std::erase_if(entries_, [ino](const auto& entry) { return entry.second == ino; });
}

std::vector<fuse_ino_t> PartitionWatch::FolderNames::inodes_of(std::string_view name) const {
    const uint64_t h = hash(name);
    auto first = std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(h, fuse_ino_t{0}));
    std::vector<fuse_ino_t> out;
    for (; first != entries_.end() && first->first == h; ++first) out.push_back(first->second);
    return out;
}

std::vector<fuse_ino_t> PartitionWatch::FolderNames::inodes() const {
    std::vector<fuse_ino_t> out;
    for (const auto& entry : entries_) out.push_back(entry.second);
    return out;
}

bool PartitionWatch::track(fuse_ino_t ino, const std::shared_ptr<const std::vector<std::string>>& files) {
    MutexLock lock(mutex_);
    auto found = tracked_.find(ino);
    if (found != tracked_.end() && found->second.files == files) return found->second.all_watched;
    Tracked t;
    t.files = files;
    std::set<int> added_to;
    for (const auto& file : *files) {
        auto [folder, name] = split_path(file);
        int wd = watch_folder(folder);
        if (wd < 0) {
            t.all_watched = false;
            t.unwatched.emplace_back(file, stamp_of(file));
            continue;
        }
        folders_[wd].names.add(name, ino);
        added_to.insert(wd);
    }
    for (int wd : added_to) folders_[wd].names.settle();
    bool all = t.all_watched;
    tracked_[ino] = std::move(t);
    return all;
}

void PartitionWatch::untrack(fuse_ino_t ino) {
    MutexLock lock(mutex_);
    auto found = tracked_.find(ino);
    if (found == tracked_.end()) return;
    std::set<std::string> folder_paths;  // each folder once (a million files may share one)
    for (const auto& file : *found->second.files) folder_paths.insert(split_path(file).first);
    for (const auto& folder_path : folder_paths) {
        auto wd = wd_of_folder_.find(folder_path);
        if (wd == wd_of_folder_.end()) continue;
        auto& folder = folders_[wd->second];
        folder.names.remove_inode(ino);
        if (!folder.names.empty()) continue;
        // Forgotten at once, so that a track() before IN_IGNORED arrives watches it afresh.
        int dropped = wd->second;
        ::inotify_rm_watch(inotify_fd_, dropped);
        drop_folder(dropped);
    }
    tracked_.erase(found);
}

bool PartitionWatch::unwatched_changed(fuse_ino_t ino) {
    std::vector<std::pair<std::string, std::string>> files;
    {
        MutexLock lock(mutex_);
        auto it = tracked_.find(ino);
        if (it == tracked_.end() || it->second.unwatched.empty()) return false;
        files = it->second.unwatched;
    }
    bool changed = false;
    for (auto& [path, stamp] : files) {
        std::string now = stamp_of(path);
        if (now != stamp) changed = true;
        stamp = now;
    }
    if (changed) {
        MutexLock lock(mutex_);
        auto it = tracked_.find(ino);
        if (it != tracked_.end()) it->second.unwatched = std::move(files);
    }
    return changed;
}

size_t PartitionWatch::watched_folders() const {
    MutexLock lock(mutex_);
    return folders_.size();
}

void PartitionWatch::handle_events(const char* buffer, size_t length, std::set<fuse_ino_t>& changed,
                                   bool& attributes) {
    MutexLock lock(mutex_);
    for (size_t at = 0; at + sizeof(inotify_event) <= length;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        at += sizeof(inotify_event) + event->len;
        if (event->mask & IN_Q_OVERFLOW) {  // events were lost: assume everything changed
            for (const auto& [ino, t] : tracked_) changed.insert(ino);
            attributes = true;
            continue;
        }
        auto folder = folders_.find(event->wd);
        if (folder == folders_.end()) continue;
        if (event->len == 0 || (event->mask & kFolderGone)) {
            if (!(event->mask & (IN_ATTRIB | kFolderGone))) continue;
            attributes = true;
            if (!(event->mask & kFolderGone)) continue;
            // The folder is gone or elsewhere: its files changed; tracking starts afresh at the next open.
            for (fuse_ino_t ino : folder->second.names.inodes()) {
                changed.insert(ino);
                tracked_.erase(ino);
            }
            if (event->mask & IN_MOVE_SELF) ::inotify_rm_watch(inotify_fd_, event->wd);
            if (event->mask & IN_IGNORED) drop_folder(event->wd);
            continue;
        }
        if ((event->mask & IN_ISDIR) && (event->mask & kAttributeEvents)) attributes = true;
        const std::vector<fuse_ino_t> named = folder->second.names.inodes_of(event->name);
        if (named.empty()) continue;
        changed.insert(named.begin(), named.end());
        if (event->mask & kAttributeEvents) attributes = true;
    }
}

void PartitionWatch::loop() {
    alignas(inotify_event) char buffer[16384];
    for (;;) {
        pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            log_line(LogLevel::Error, std::string("partition watch stopped: ") + std::strerror(errno));
            return;
        }
        if (fds[1].revents) return;
        std::set<fuse_ino_t> changed;
        bool attributes = false;
        for (;;) {
            ssize_t n = ::read(inotify_fd_, buffer, sizeof buffer);
            if (n <= 0) break;  // EAGAIN: drained
            handle_events(buffer, static_cast<size_t>(n), changed, attributes);
        }
        if (attributes && attributes_changed_) attributes_changed_();
        if (!changed.empty() && contents_changed_) contents_changed_({changed.begin(), changed.end()});
    }
}

}  // namespace ncafs::fs
