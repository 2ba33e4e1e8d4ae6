#include "fs/log.hpp"

#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "io/mutex.hpp"

namespace ncafs::fs {

namespace {

struct RateEntry {
    std::chrono::steady_clock::time_point last;
    uint64_t suppressed = 0;
};

struct LogState {
    Mutex mutex;  // lock order: innermost of ours (taken under PartitionWatch::mutex_)
    bool syslog NCAFS_GUARDED_BY(mutex) = false;
    bool journal NCAFS_GUARDED_BY(mutex) = false;  // stderr is systemd's journal stream: lines carry <N>
    bool debug NCAFS_GUARDED_BY(mutex) = false;
    std::unordered_map<std::string, RateEntry> recent NCAFS_GUARDED_BY(mutex);
    std::unordered_set<std::string> once NCAFS_GUARDED_BY(mutex);
};

LogState& state() {
    static LogState s;
    return s;
}

constexpr size_t kMaxRemembered = 10000;  // bound of the rate-limit and once tables
constexpr auto kRateInterval = std::chrono::seconds(60);

const char* level_word(LogLevel level) {
    switch (level) {
        case LogLevel::Debug: return "debug";
        case LogLevel::Info: return "info";
        case LogLevel::Warning: return "warning";
        case LogLevel::Error: return "error";
    }
    return "";
}

int syslog_priority(LogLevel level) {
    switch (level) {
        case LogLevel::Debug: return LOG_DEBUG;
        case LogLevel::Info: return LOG_INFO;
        case LogLevel::Warning: return LOG_WARNING;
        case LogLevel::Error: return LOG_ERR;
    }
    return LOG_INFO;
}

// systemd sets JOURNAL_STREAM=DEV:INODE for a service whose stderr is
// connected to the journal; a child with another stderr inherits the variable,
// hence the comparison with stderr itself.
bool stderr_is_journal() {
    const char* value = std::getenv("JOURNAL_STREAM");
    struct stat st {};
    if (value == nullptr || ::fstat(STDERR_FILENO, &st) != 0) return false;
    unsigned long long device = 0, inode = 0;
    if (std::sscanf(value, "%llu:%llu", &device, &inode) != 2) return false;
    return device == static_cast<unsigned long long>(st.st_dev) && inode == static_cast<unsigned long long>(st.st_ino);
}

void write_locked(LogState& s, LogLevel level, const std::string& raw) NCAFS_REQUIRES(s.mutex) {
    if (level == LogLevel::Debug && !s.debug) return;
    const std::string message = escape_log_text(raw);
    if (s.syslog) {
        ::syslog(syslog_priority(level), "%s", message.c_str());
    } else {
        // sd-daemon(3): a "<N>" prefix gives journald the line's priority.
        if (s.journal) std::fprintf(stderr, "<%d>", syslog_priority(level));
        std::fprintf(stderr, "ncafs: %s: %s\n", level_word(level), message.c_str());
        std::fflush(stderr);
    }
}

}  // namespace

std::string escape_log_text(const std::string& message) {
    std::string out;
    out.reserve(message.size());
    for (char c : message) {
        const auto b = static_cast<unsigned char>(c);
        if (b >= 0x20 && b != 0x7f) {
            out += c;
            continue;
        }
        static const char hex[] = "0123456789abcdef";
        out += "\\x";
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

void log_to_stderr(bool debug) {
    auto& s = state();
    MutexLock lock(s.mutex);
    s.syslog = false;
    s.journal = stderr_is_journal();
    s.debug = debug;
}

void log_to_syslog(bool debug) {
    auto& s = state();
    MutexLock lock(s.mutex);
    ::openlog("ncafs", LOG_PID, LOG_DAEMON);
    s.syslog = true;
    s.debug = debug;
}

void log_line(LogLevel level, const std::string& message) {
    auto& s = state();
    MutexLock lock(s.mutex);
    write_locked(s, level, message);
}

void log_rate_limited(LogLevel level, const std::string& message) { log_rate_limited(level, message, message); }

void log_rate_limited(LogLevel level, const std::string& message, const std::string& key) {
    auto& s = state();
    auto now = std::chrono::steady_clock::now();
    MutexLock lock(s.mutex);
    auto it = s.recent.find(key);
    if (it != s.recent.end() && now - it->second.last < kRateInterval) {
        ++it->second.suppressed;
        return;
    }
    uint64_t suppressed = it == s.recent.end() ? 0 : it->second.suppressed;
    if (it == s.recent.end() && s.recent.size() >= kMaxRemembered) s.recent.clear();
    s.recent[key] = RateEntry{now, 0};
    write_locked(s, level,
                 suppressed ? message + " (repeated " + std::to_string(suppressed) + " times since last logged)"
                            : message);
}

void log_once(LogLevel level, const std::string& message) {
    auto& s = state();
    MutexLock lock(s.mutex);
    if (s.once.count(message)) return;
    if (s.once.size() >= kMaxRemembered) s.once.clear();
    s.once.insert(message);
    write_locked(s, level, message);
}

}  // namespace ncafs::fs
