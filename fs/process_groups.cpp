#include "fs/process_groups.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <sstream>

namespace ncafs::fs {

namespace {

constexpr size_t kMaxGroups = 65536;        // NGROUPS_MAX of the kernel
constexpr size_t kMaxStatus = 4u << 20;     // 65,536 groups take about 720 KB

// The text after "KEY:" on its own line, up to (not including) the newline;
// nullopt when the key is absent or its line has no newline (cut short).
std::optional<std::string> field(const std::string& status, const std::string& key) {
    const std::string start = key + ":";
    size_t at = 0;
    if (status.compare(0, start.size(), start) != 0) {
        at = status.find("\n" + start);
        if (at == std::string::npos) return std::nullopt;
        ++at;
    }
    const size_t end = status.find('\n', at);
    if (end == std::string::npos) return std::nullopt;
    return status.substr(at + start.size(), end - at - start.size());
}

// Whitespace-separated decimal numbers below 2^32 - 1; nullopt on anything else.
std::optional<std::vector<uint32_t>> numbers(const std::string& text, size_t limit) {
    std::vector<uint32_t> out;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        if (out.size() >= limit || word.size() > 10) return std::nullopt;
        uint64_t value = 0;
        for (char c : word) {
            if (c < '0' || c > '9') return std::nullopt;
            value = value * 10 + static_cast<uint64_t>(c - '0');
        }
        if (value >= UINT32_MAX) return std::nullopt;
        out.push_back(static_cast<uint32_t>(value));
    }
    return out;
}

// "Uid:" and "Gid:" list real, effective, saved and filesystem ids: FUSE
// names the caller by the filesystem ones.
bool fs_id_is(const std::string& status, const char* key, uint32_t id) {
    auto text = field(status, key);
    if (!text) return false;
    auto ids = numbers(*text, 4);
    return ids && ids->size() == 4 && (*ids)[3] == id;
}

}  // namespace

std::optional<std::vector<gid_t>> groups_from_status(const std::string& status, uid_t fsuid, gid_t fsgid) {
    if (!fs_id_is(status, "Uid", fsuid) || !fs_id_is(status, "Gid", fsgid)) return std::nullopt;
    auto text = field(status, "Groups");
    if (!text) return std::nullopt;
    auto groups = numbers(*text, kMaxGroups);
    if (!groups) return std::nullopt;
    return std::vector<gid_t>(groups->begin(), groups->end());
}

std::optional<std::vector<gid_t>> groups_of_thread(pid_t tid, uid_t fsuid, gid_t fsgid) {
    if (tid <= 0) return std::nullopt;
    const std::string t = std::to_string(tid);
    const int fd = ::open(("/proc/" + t + "/task/" + t + "/status").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string status;
    char buffer[65536];
    bool complete = false;
    while (status.size() <= kMaxStatus) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        if (n == 0) {
            complete = true;
            break;
        }
        status.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    if (!complete) return std::nullopt;
    return groups_from_status(status, fsuid, fsgid);
}

}  // namespace ncafs::fs
